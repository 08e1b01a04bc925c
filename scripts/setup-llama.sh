#!/usr/bin/env bash
# Builds llama.cpp's llama-server and llama-convert-llama2c-to-ggml from the source that the
# npm package node-llama-cpp@3.21.1 ships, and generates two small random-weight Llama models.
# Everything lives in a cache outside the source tree: ${HEARSAY_CACHE:-$HOME/.cache/hearsay}/llama/.
# Idempotent: stamp files make later runs return at once. Nothing of llama.cpp enters the repo.
#
# Usage: scripts/setup-llama.sh [--build-only] [--model-tool PATH]
#   --build-only        build llama.cpp, skip the model
#   --model-tool PATH   the hearsay tool make_llama2c_model (default: looked up in build dirs)
# Prints, on its last line, nothing; the paths are stable:
#   $CACHE/llama/bin/llama-server, $CACHE/llama/models/hearsay-tiny.gguf (and hearsay-tiny-b.gguf,
#   a second, smaller model)
set -euo pipefail

NODE_LLAMA_CPP_VERSION=3.21.1
cache_root="${HEARSAY_CACHE:-$HOME/.cache/hearsay}"
dir="$cache_root/llama"
src="$dir/src"
bld="$dir/build"
bin="$dir/bin"
models="$dir/models"
jobs="${HEARSAY_LLAMA_JOBS:-2}"

build_only=0
model_tool=""
while [ $# -gt 0 ]; do
  case "$1" in
    --build-only) build_only=1 ;;
    --model-tool) model_tool="$2"; shift ;;
    *) echo "setup-llama: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done

log() { echo "setup-llama: $*" >&2; }
mkdir -p "$dir" "$bin" "$models"

# One setup at a time per cache (tests may run in parallel).
exec 9>"$dir/.lock"
flock 9

build_stamp="$dir/build.stamp"
if [ ! -f "$build_stamp" ]; then
  for tool in npm git cmake; do
    command -v "$tool" >/dev/null || { log "missing tool: $tool"; exit 3; }
  done
  if [ ! -f "$dir/npm/node_modules/node-llama-cpp/llama/gitRelease.bundle" ]; then
    log "fetching node-llama-cpp@$NODE_LLAMA_CPP_VERSION (for its llama.cpp source bundle)"
    mkdir -p "$dir/npm"
    (cd "$dir/npm" && [ -f package.json ] || echo '{"name":"hearsay-llama-cache","private":true}' > package.json)
    (cd "$dir/npm" && npm i -E "node-llama-cpp@$NODE_LLAMA_CPP_VERSION" --ignore-scripts --no-audit --no-fund --loglevel=error)
  fi
  if [ ! -f "$src/CMakeLists.txt" ]; then
    log "cloning llama.cpp from the bundle"
    rm -rf "$src"
    git -c advice.detachedHead=false clone -q "$dir/npm/node_modules/node-llama-cpp/llama/gitRelease.bundle" "$src"
  fi
  log "configuring llama.cpp (CPU only, no curl)"
  cmake -S "$src" -B "$bld" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DLLAMA_CURL=OFF -DGGML_CUDA=OFF -DGGML_METAL=OFF -DGGML_VULKAN=OFF -DGGML_HIP=OFF \
    -DGGML_SYCL=OFF -DGGML_OPENCL=OFF -DGGML_NATIVE=ON -DBUILD_SHARED_LIBS=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=ON -DLLAMA_BUILD_SERVER=ON >"$dir/configure.log" 2>&1 \
    || { log "cmake configure failed, see $dir/configure.log"; exit 4; }
  log "building llama-server and llama-convert-llama2c-to-ggml (-j$jobs, nice 10; minutes)"
  nice -n 10 cmake --build "$bld" --target llama-server llama-convert-llama2c-to-ggml -j"$jobs" >"$dir/build.log" 2>&1 \
    || { log "build failed, see $dir/build.log"; exit 5; }
  cp "$bld/bin/llama-server" "$bld/bin/llama-convert-llama2c-to-ggml" "$bin/"
  cp "$src/models/ggml-vocab-llama-spm.gguf" "$models/"
  (cd "$src" && git rev-parse HEAD) > "$build_stamp"
  log "llama.cpp built: $bin"
fi

[ "$build_only" = 1 ] && exit 0

# The models: llama2.c checkpoints with seeded random weights, converted to GGUF. The first is the
# test model; the second (another seed, smaller) is a different model for the 2-model pool test.
# Dimensions chosen so prefill of a few hundred tokens costs tens of ms on one core.
MODEL_DIM="${HEARSAY_MODEL_DIM:-256}"
MODEL_HIDDEN="${HEARSAY_MODEL_HIDDEN:-768}"
MODEL_LAYERS="${HEARSAY_MODEL_LAYERS:-4}"
MODEL_HEADS="${HEARSAY_MODEL_HEADS:-8}"
MODEL_KV_HEADS="${HEARSAY_MODEL_KV_HEADS:-8}"
MODEL_SEQ="${HEARSAY_MODEL_SEQ:-2048}"
MODEL_SEED="${HEARSAY_MODEL_SEED:-1}"

find_model_tool() {
  [ -n "$model_tool" ] && return 0
  local here cand
  here="$(cd "$(dirname "$0")/.." && pwd)"
  for cand in "$here"/build/*/tools/make_llama2c_model "$here"/build/*/make_llama2c_model; do
    if [ -x "$cand" ]; then model_tool="$cand"; return 0; fi
  done
}

# make_model NAME STAMP DIM HIDDEN LAYERS HEADS KV_HEADS SEQ SEED: $models/NAME.gguf, regenerated
# only when STAMP does not record these dimensions.
make_model() {
  local name="$1" stamp="$models/$2" dim="$3" hidden="$4" layers="$5" heads="$6" kv="$7"
  local seq="$8" seed="$9"
  local spec="d${dim}-h${hidden}-l${layers}-nh${heads}-kv${kv}-s${seq}-seed${seed}"
  local gguf="$models/$name.gguf" ckpt="$models/$name.bin"
  if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$spec" ] && [ -f "$gguf" ]; then
    return 0
  fi
  find_model_tool
  [ -n "$model_tool" ] && [ -x "$model_tool" ] || { log "make_llama2c_model not found; build target make_llama2c_model or pass --model-tool"; exit 6; }
  log "generating model $name $spec"
  "$model_tool" --out "$ckpt" --dim "$dim" --hidden-dim "$hidden" --layers "$layers" \
    --heads "$heads" --kv-heads "$kv" --vocab 32000 --seq-len "$seq" --seed "$seed"
  "$bin/llama-convert-llama2c-to-ggml" --copy-vocab-from-model "$models/ggml-vocab-llama-spm.gguf" \
    --llama2c-model "$ckpt" --llama2c-output-model "$gguf.tmp" >"$models/convert-$name.log" 2>&1 \
    || { log "conversion failed, see $models/convert-$name.log"; exit 7; }
  mv "$gguf.tmp" "$gguf"
  rm -f "$ckpt"
  echo "$spec" > "$stamp"
  log "model ready: $gguf"
}

make_model hearsay-tiny model.stamp "$MODEL_DIM" "$MODEL_HIDDEN" "$MODEL_LAYERS" "$MODEL_HEADS" \
  "$MODEL_KV_HEADS" "$MODEL_SEQ" "$MODEL_SEED"
make_model hearsay-tiny-b model-b.stamp 128 384 2 4 4 2048 2
