# The front door. `make demo` and `make test` work from a clean clone on Debian 12 as root.
SHELL := /bin/bash
JOBS ?= $(shell nproc)
FUZZ_SECONDS ?= 20

.PHONY: all deps build demo test test-release test-asan test-tsan test-llama fuzz fuzz-smoke bench bench-forwarding soak format clean

all: build

deps:
	@scripts/install-deps.sh

build: deps
	cmake --preset release >/dev/null
	cmake --build --preset release -j $(JOBS)

# The 4-node local cluster demo: only the `hearsay` binary is needed, so only it is built.
# DEMO_ARGS passes flags through, e.g. make demo DEMO_ARGS="--requests 400 --json".
demo: deps
	cmake --preset release >/dev/null
	cmake --build --preset release --target hearsay -j $(JOBS)
	build/release/hearsay demo $(DEMO_ARGS)

test: deps test-release test-asan fuzz-smoke

test-release: deps
	cmake --preset release >/dev/null
	cmake --build --preset release -j $(JOBS)
	ctest --preset release

test-asan: deps
	cmake --preset asan >/dev/null
	cmake --build --preset asan -j $(JOBS)
	ctest --preset asan

test-tsan: deps
	cmake --preset tsan >/dev/null
	cmake --build --preset tsan -j $(JOBS)
	ctest --preset tsan

# Builds the libFuzzer targets with clang and runs each for FUZZ_SECONDS.
fuzz-smoke: deps
	cmake --preset fuzz >/dev/null
	cmake --build --preset fuzz --target hearsay_fuzzers -j $(JOBS)
	scripts/run-fuzzers.sh build/fuzz $(FUZZ_SECONDS)

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

# The llama.cpp end-to-end test: builds llama.cpp once into ~/.cache/hearsay (minutes), then runs
# 3 nodes in front of 3 real llama-servers.
test-llama: build
	ctest --test-dir build/release -L llama --output-on-failure

soak: build
	ctest --test-dir build/release -L soak --output-on-failure

format:
	find src bench tests fuzz -name '*.h' -o -name '*.cc' | xargs clang-format -i

clean:
	rm -rf build
