# The front door. `make demo` and `make test` work from a clean clone on Debian 12 as root.
SHELL := /bin/bash
JOBS ?= $(shell nproc)
FUZZ_SECONDS ?= 20
# `make soak`: how long the chaos soak (tests/netns/chaos_soak_test.cc) runs its mixed faults.
SOAK_SECONDS ?= 3600

.PHONY: all deps build deb llama demo test test-release test-asan test-tsan test-tsan-integration test-llama chaos fuzz fuzz-smoke bench bench-forwarding bench-hostile bench-llama soak chaos-soak format clean

all: build

deps:
	@scripts/install-deps.sh

build: deps
	cmake --preset release >/dev/null
	cmake --build --preset release -j $(JOBS)

# The Debian package (CPack): build/release/packages/hearsay_<version>_amd64.deb. It installs
# /usr/bin/hearsay, the systemd unit, /etc/hearsay/node.toml (a conffile) and the docs, adds the
# `hearsay` system user and starts nothing until /etc/hearsay/cluster.key exists (docs/deploy.md).
deb: deps
	cmake --preset release >/dev/null
	cmake --build --preset release --target hearsay -j $(JOBS)
	cd build/release && cpack -G DEB

# The 4-node local cluster demo: only the `hearsay` binary is needed, so only it is built.
# DEMO_ARGS passes flags through, e.g. make demo DEMO_ARGS="--requests 400 --json".
demo: deps
	cmake --preset release >/dev/null
	cmake --build --preset release --target hearsay -j $(JOBS)
	build/release/hearsay demo $(DEMO_ARGS)

test: deps test-release test-asan fuzz-smoke

# The release suite includes the llama.cpp end-to-end test (label llama, run alone); `llama` has
# built llama.cpp and the test model by then.
test-release: deps llama
	cmake --preset release >/dev/null
	cmake --build --preset release -j $(JOBS)
	ctest --preset release

# llama.cpp's llama-server and the small random-weight test model, for the end-to-end test and
# `hearsay demo --engine llama`: built once into ${HEARSAY_CACHE:-~/.cache/hearsay}/llama (about
# 7 minutes on 2 idle cores), then reused at once. Exit code 3 means a build tool (npm, git,
# cmake) is missing: the test then reports itself SKIPPED, loudly. Any other failure stops here.
llama: deps
	cmake --preset release >/dev/null
	cmake --build --preset release --target make_llama2c_model -j $(JOBS)
	scripts/setup-llama.sh --model-tool build/release/tools/make_llama2c_model || [ $$? -eq 3 ]

# One sanitizer build (clang 14, ASan + UBSan, build/asan) serves two steps: the in-process test
# binaries and the libFuzzer targets share its objects. The tests that start `hearsay` processes
# run in the release (and tsan) builds.
test-asan: deps
	cmake --preset asan >/dev/null
	cmake --build --preset asan --target hearsay_unit_tests -j $(JOBS)
	ctest --preset asan

# ThreadSanitizer: the unit tests and the integration tests (real `hearsay node` processes, see
# test-tsan-integration). Not part of `make test`.
test-tsan: deps
	cmake --preset tsan >/dev/null
	cmake --build --preset tsan -j $(JOBS)
	ctest --preset tsan

# Only the integration tests (real `hearsay node` processes, `hearsay bench` and `hearsay demo`)
# against a ThreadSanitizer-built hearsay: every process writes its reports into
# build/tsan/sanitizer-reports, and the run fails if any appear (tests/sanitizer_reports.sh).
# The tests take about 3 minutes on 2 loaded cores, after the tsan build.
test-tsan-integration: deps
	cmake --preset tsan >/dev/null
	cmake --build --preset tsan --target hearsay hearsay_integration_test hearsay_loadgen_cli_test -j $(JOBS)
	ctest --preset tsan-integration

# Builds the libFuzzer targets (in the sanitizer build) and runs each for FUZZ_SECONDS.
fuzz-smoke: deps
	cmake --preset asan >/dev/null
	cmake --build --preset asan --target hearsay_fuzzers -j $(JOBS)
	scripts/run-fuzzers.sh build/asan $(FUZZ_SECONDS)

fuzz: FUZZ_SECONDS = 600
fuzz: fuzz-smoke

bench: build
	build/release/bench/hearsay_bench --benchmark_repetitions=5 \
	  --benchmark_report_aggregates_only=true $(BENCH_ARGS)

# The forwarding path against nginx (docs/benchmarks.md): wrk drives a fixed-response upstream
# directly, through nginx and through one hearsay node, interleaved over rounds. Not part of
# `make test`. BENCH_FORWARDING_ENV passes settings, e.g. "ROUNDS=9 MODES=json".
bench-forwarding: deps
	cmake --preset release >/dev/null
	cmake --build --preset release --target hearsay hearsay_fixed_upstream hearsay_bench -j $(JOBS)
	env $(BENCH_FORWARDING_ENV) scripts/bench-forwarding.sh build/release

# /health beside hostile request bodies (docs/security.md): real sim nodes, bodies shaped to be
# expensive up to the body limit, /health latency meanwhile. Not part of `make test`.
# BENCH_HOSTILE_ENV passes settings, e.g. "SECONDS_PER_CELL=5 CONFIGS=one-thread".
bench-hostile: deps
	cmake --preset release >/dev/null
	cmake --build --preset release --target hearsay hearsay_hostile_body -j $(JOBS)
	env $(BENCH_HOSTILE_ENV) scripts/bench-hostile-body.sh build/release

# hearsay against paper and least-loaded on 4 real llama-servers, rates 1 and 2, seeds 1-3 (issue
# 22's goals; docs/benchmarks.md): about 55 minutes on an otherwise idle 2-core machine. Results
# and decision records in build/llama-grid (an interrupted grid resumes; delete a cell's JSON to
# rerun it). Not part of `make test`. BENCH_LLAMA_ARGS passes options, e.g. "--rates 2 --seeds 2".
bench-llama: build llama
	python3 scripts/llama-grid.py --hearsay build/release/hearsay --out build/llama-grid $(BENCH_LLAMA_ARGS)

# Only the llama.cpp end-to-end test (also part of test-release): 4 nodes in front of 4 real
# llama-servers.
test-llama: build llama
	ctest --test-dir build/release -L llama --output-on-failure

# The test bed's chaos tests (label netns, tests/netns): `hearsay node` processes in network
# namespaces on a bridge, with partitions injected by nftables. Needs root; without namespaces the
# tests report themselves SKIPPED. About 3 min on 2 loaded cores; `make test` runs a short set of
# them (about 65 s, CMakePresets.json). docs/testbed.md.
chaos: deps
	cmake --preset release >/dev/null
	cmake --build --preset release --target hearsay hearsay_netns_test -j $(JOBS)
	set -o pipefail; ctest --test-dir build/release -L netns -V 2>&1 | tee build/release/chaos.log \
	  | grep -E 'chaos-report:|Test +#|tests passed|\(Failed\)|Failure'
	@echo "every test's output: build/release/chaos.log"

# Every test labelled soak: the simulator's long gossip fault suite and the chaos soak on the test
# bed (SOAK_SECONDS of mixed faults, default an hour; SOAK_SEED draws another sequence).
soak: build
	SOAK_SECONDS=$(SOAK_SECONDS) ctest --test-dir build/release -L soak --output-on-failure \
	  --timeout $$(( $(SOAK_SECONDS) + 900 ))

# The chaos soak alone, e.g. make chaos-soak SOAK_SECONDS=120.
chaos-soak: deps
	cmake --preset release >/dev/null
	cmake --build --preset release --target hearsay hearsay_netns_soak_test -j $(JOBS)
	SOAK_SECONDS=$(SOAK_SECONDS) ctest --test-dir build/release -R '^ChaosSoakTest' -V \
	  --timeout $$(( $(SOAK_SECONDS) + 900 ))

format:
	find src bench tests fuzz -name '*.h' -o -name '*.cc' | xargs clang-format -i

clean:
	rm -rf build
