# galloc: `make run` plans a bundled real-model graph, `make test` runs every test.
# Both work on a fresh machine: they install the Debian packages they need first.

BUILD       ?= build
ASAN_BUILD  ?= build-asan
TSAN_BUILD  ?= build-tsan
JOBS       ?= 2
GGML_CACHE ?= $(HOME)/.cache/galloc/ggml
# The ggml builds, each named after the npm package version it comes from (README, glossary).
LLAMA_RN_SPEC   := llama.rn@0.12.9
WHISPER_RN_SPEC := whisper.rn@0.4.0-rc.10
# The 2023 ggml, whose ggml-alloc.h is the measure allocator API (ggml_allocr_*).
API_2023_SPEC   := whisper.rn@0.4.0-rc.8
# llama.rn@0.12.9 -> $(GGML_CACHE)/llama-rn-0.12.9
ggml_dir = $(GGML_CACHE)/$(subst .rn@,-rn-,$(1))
GGML_LLAMA_RN   := $(call ggml_dir,$(LLAMA_RN_SPEC))
GGML_WHISPER_RN := $(call ggml_dir,$(WHISPER_RN_SPEC))
GGML_2023_API   := $(call ggml_dir,$(API_2023_SPEC))
# The same ggml as GGML_LLAMA_RN built with AddressSanitizer, for the drop-in's shared-arena
# tests under make asan-test.
GGML_SANITIZED := $(GGML_LLAMA_RN)-asan
SANITIZED_FLAGS := -fsanitize=address -fno-omit-frame-pointer
# The one-file drop-in's builds inside the npm packages' ggml, as shipped (tests/amalgamation).
PACKAGES_OUT  := $(GGML_CACHE)/as-shipped

# Each is used: GoogleTest (unit tests), nlohmann-json (graph files), zlib (gzip'd graph
# files), CLI11 (the CLI), RapidCheck (property tests), Chromium (the timeline page's
# browser test), clang and its runtime (the clang build and the fuzzers), the cross compilers
# and qemu-user (the packages' other ABIs: aarch64, armhf, i686; Debian's g++-multilib cannot
# be installed beside the ARM cross compilers, so i686 has its own).
DEBIAN_PACKAGES := cmake g++ make libgtest-dev nlohmann-json3-dev libcli11-dev zlib1g-dev librapidcheck-dev \
                   chromium clang clang-format libclang-rt-14-dev \
                   g++-aarch64-linux-gnu g++-arm-linux-gnueabihf g++-i686-linux-gnu qemu-user

.PHONY: all deps ggml configure build run test bench bench-report unit-test asan-test tsan-test clean

all: build

# Installs what is missing (as root, which these machines are), nothing otherwise.
deps:
	@missing=$$(for p in $(DEBIAN_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing:" $$missing; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	fi
	@# npm fetches ggml's sources; the machine image may ship its own Node.js, so only the
	@# command is checked.
	@command -v npm >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq npm >/dev/null; }

# Stock ggml (core + CPU backend) from the npm registry, built once into $(GGML_CACHE). The
# drop-in variant is built by the CMake build, from the one-file drop-in (tests/dropin).
ggml: deps
	@GALLOC_DROPIN_SOURCE= integrations/ggml/build.sh $(LLAMA_RN_SPEC) $(GGML_LLAMA_RN)
	@GALLOC_DROPIN_SOURCE= integrations/ggml/build.sh $(WHISPER_RN_SPEC) $(GGML_WHISPER_RN)
	@GALLOC_DROPIN_SOURCE= integrations/ggml/build.sh $(API_2023_SPEC) $(GGML_2023_API)
	@GALLOC_DROPIN_SOURCE= GALLOC_GGML_EXTRA_CFLAGS="$(SANITIZED_FLAGS)" \
	  integrations/ggml/build.sh $(LLAMA_RN_SPEC) $(GGML_SANITIZED)

configure: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DGALLOC_GGML_LLAMA_RN_DIR=$(if $(wildcard $(GGML_LLAMA_RN)/libggml-stock.a),$(GGML_LLAMA_RN),) \
	  -DGALLOC_GGML_WHISPER_RN_DIR=$(if $(wildcard $(GGML_WHISPER_RN)/libggml-stock.a),$(GGML_WHISPER_RN),) \
	  -DGALLOC_GGML_2023_API_DIR=$(if $(wildcard $(GGML_2023_API)/libggml-stock.a),$(GGML_2023_API),) \
	  -DGALLOC_PACKAGES_OUT=$(if $(wildcard $(GGML_LLAMA_RN)/libggml-stock.a),$(PACKAGES_OUT),) >/dev/null

build: configure
	@cmake --build $(BUILD) -j$(JOBS) -- --no-print-directory

# Real-model graphs from the zoo: llama-7b prompt processing (where ggml already reaches the
# lower bound) and the whisper-large encoder (where it does not), every strategy side by side,
# and the memory timeline of `best` on the second in out/report.html.
RUN_GRAPHS ?= bench/graphs/llama-rn-0.12.9-llama-2-7b-ctx4096-pp512-flash.json.gz \
              bench/graphs/whisper-rn-0.4.0-rc.10-large-v3-flash-encode.json.gz
run: build
	@for g in $(RUN_GRAPHS); do $(BUILD)/bin/galloc compare $$g || exit 1; echo; done
	@mkdir -p out
	@$(BUILD)/bin/galloc render $(lastword $(RUN_GRAPHS)) --html out/report.html
	@echo "wrote out/report.html (open it in a browser)"

# The benchmark programs of bench/ (the default build makes only those a test runs once);
# docs/PERFORMANCE.md gives each one's command.
bench: build
	@cmake --build $(BUILD) -j$(JOBS) --target galloc_benches -- --no-print-directory
	@ls $(BUILD)/bench/galloc_*

# Runs the benchmarks of docs/PERFORMANCE.md again and prints its tables (bench/report.sh; with
# REPORT_ARGS=--check it compares the page's sizes with this build's instead).
bench-report: bench
	@bench/report.sh $(REPORT_ARGS) $(BUILD)

# Unit, C API, consumer, differential and amalgamation tests (built with g++); then the unit
# tests and the drop-in's shared-arena tests under ASan + UBSan (g++), and the unit tests built
# with clang++ under TSan (shared arenas are used from several threads).
test: ggml
	@$(MAKE) --no-print-directory build
	@cd $(BUILD) && ctest --output-on-failure -j$(JOBS)
	@$(MAKE) --no-print-directory asan-test
	@$(MAKE) --no-print-directory tsan-test

# With the sanitized ggml (make ggml), the drop-in's shared-arena tests run under ASan too.
SANITIZED_READY = $(wildcard $(GGML_SANITIZED)/libggml-stock.a)
asan-test: deps
	@cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DGALLOC_SANITIZE=ON -DGALLOC_BUILD_TOOLS=OFF \
	  -DGALLOC_GGML_SANITIZED_DIR=$(if $(SANITIZED_READY),$(GGML_SANITIZED),) \
	  "-DGALLOC_GGML_SANITIZED_FLAGS=$(SANITIZED_FLAGS)" >/dev/null
	@cmake --build $(ASAN_BUILD) -j$(JOBS) --target galloc_unit_tests galloc_c_api_test \
	  $(if $(SANITIZED_READY),galloc_dropin_sanitized,)
	@cd $(ASAN_BUILD) && ctest --output-on-failure -j$(JOBS) -L "unit|dropin-sanitized"

# clang++, so that one build checks clang's warnings (-Werror) and runs the tests under TSan.
tsan-test: deps
	@CXX=clang++ CC=clang cmake -S . -B $(TSAN_BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGALLOC_SANITIZE_THREAD=ON -DGALLOC_BUILD_TOOLS=OFF >/dev/null
	@cmake --build $(TSAN_BUILD) -j$(JOBS) --target galloc_unit_tests galloc_c_api_test
	@cd $(TSAN_BUILD) && ctest --output-on-failure -j$(JOBS) -L unit

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(TSAN_BUILD)
