# dsperf — one Makefile. `make` builds ./dsperf; `make test` runs every test and ends with
# "N passed, N failed"; `make test-asan` the same under ASan/UBSan, `make test-tsan` under
# ThreadSanitizer; `make demo`; `make bench`.
# Layout: src/<module>/*.c is the program (src/main.c the entry point); src/<module>/*_test.c and
# tests/*_test.c are tests, linked with tests/harness.c into one test binary.

PKGS    := libcurl libevent libevent_pthreads jansson libpcre2-8 libcrypto ompi-c sqlite3 zlib liburing
# Open MPI's header is read at build time; libmpi itself is loaded at run time, only under a launcher
# (src/dist/mpi_load.c), so a run outside mpirun needs no Open MPI installed
LIBPKGS := $(filter-out ompi-c,$(PKGS))
CC      ?= cc
OPT     ?= -O2
CFLAGS  ?= $(OPT) -g
WARN    := -Wall -Wextra -Werror -Wno-unused-parameter
BASEFLAGS := -std=c11 -D_GNU_SOURCE -pthread -Isrc -Itests $(WARN) $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
LDLIBS  := $(shell pkg-config --libs $(LIBPKGS) 2>/dev/null) -ldl -lm -pthread

BUILD   ?= build
ALL_C   := $(wildcard src/*.c src/*/*.c)
TEST_C  := $(filter %_test.c,$(ALL_C)) $(wildcard tests/*_test.c)
LIB_C   := $(filter-out src/main.c %_test.c,$(ALL_C))
LIB_O   := $(LIB_C:%.c=$(BUILD)/%.o)
TEST_SUP := $(filter-out %_test.c,$(wildcard tests/*.c))
TEST_O  := $(TEST_C:%.c=$(BUILD)/%.o) $(TEST_SUP:%.c=$(BUILD)/%.o)
# The fuzz targets (fuzz/) are linked into the tests too: tests/fuzz_corpus_test.c replays the corpus.
FUZZ_C  := $(filter-out fuzz/libfuzzer_main.c,$(wildcard fuzz/*.c))
TEST_O  += $(FUZZ_C:%.c=$(BUILD)/%.o)

.PHONY: test-libcurl-path all deps build test run-tests test-asan test-tsan testdata-npm real-engine demo demo-reasoning bench bench-burst clean fuzz fuzz-build completion man
# Public targets check the Debian dependencies first, then re-enter make so that pkg-config's
# answers are read after any install.
all: deps
	@$(MAKE) --no-print-directory build

build: dsperf

deps:
	@sh scripts/deps.sh

dsperf: $(BUILD)/dsperf
	@rm -f $@; cp $< $@

$(BUILD)/dsperf: $(BUILD)/src/main.o $(LIB_O)
	@echo "  LD $@"
	@$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)


$(BUILD)/dsperf_test: $(TEST_O) $(LIB_O)
	@echo "  LD $@"
	@$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# tests that misbehave on purpose (crash, hang), run by tests/harness_test.c through the harness
$(BUILD)/harness_selftest: $(BUILD)/tests/selftest/harness_selftest.o $(BUILD)/tests/harness.o
	@echo "  LD $@"
	@$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "  CC $<"
	@$(CC) $(BASEFLAGS) $(CFLAGS) -MMD -MP -c -o $@ $<

# The stand-in libnvidia-ml.so.1 the NVML tests load (tests/nvml_stub/): the sampler and GPM math are
# tested with known values on machines without a GPU.
NVML_STUB := $(BUILD)/nvml_stub/libnvidia-ml.so.1
$(NVML_STUB): tests/nvml_stub/nvml_stub.c
	@mkdir -p $(dir $@)
	@echo "  SO $@"
	@$(CC) -std=c11 -D_GNU_SOURCE $(WARN) $(CFLAGS) $(LDFLAGS) -shared -fPIC -fvisibility=hidden -Wl,-soname,libnvidia-ml.so.1 -o $@ $<

$(BUILD)/dsperf_test: | $(NVML_STUB)

# The tests run the real binary (integration tests start `dsperf serve` on loopback). Each test
# runs in its own process with a deadline (DSPERF_TEST_TIMEOUT seconds); T=substring picks tests.
test: deps
	@$(MAKE) --no-print-directory run-tests

TEST_TIMEOUT ?= 300
# Tests run TEST_JOBS at a time (each owns its process group, temp dir and ports); most of a test's
# time is a server's configured timing, not CPU. X="a b" leaves out tests matching a or b.
TEST_JOBS ?= 4
# SAN_LOGS (sanitizer builds): every process writes its reports there, so a report from a dsperf
# the tests ran as a child fails the target even when that test ignored the exit code.
# ENGINE= leaves the real engine's build out of a run whose tests do not need it (CI's TSan pass,
# which runs beside that build)
ENGINE ?= real-engine
run-tests: $(BUILD)/dsperf $(BUILD)/dsperf_test $(BUILD)/harness_selftest testdata-npm $(ENGINE)
	@$(if $(SAN_LOGS),rm -rf $(SAN_LOGS); mkdir -p $(SAN_LOGS);) \
	  ulimit -n 65536 2>/dev/null || true; DSPERF_TEST_TIMEOUT=$${DSPERF_TEST_TIMEOUT:-$(TEST_TIMEOUT)} \
	  DSPERF_TEST_JOBS=$${DSPERF_TEST_JOBS:-$(TEST_JOBS)} \
	  DSPERF_BIN=$(BUILD)/dsperf DSPERF_SELFTEST_BIN=$(BUILD)/harness_selftest $(BUILD)/dsperf_test $(T) $(foreach x,$(X),-x $(x)); rc=$$?; \
	  $(if $(SAN_LOGS),if [ -n "$$(ls -A $(SAN_LOGS))" ]; then echo "sanitizer reports from processes the tests ran:"; \
	    head -n 60 $(SAN_LOGS)/*; rc=1; fi;) exit $$rc

testdata-npm:
	@sh scripts/testdata_npm.sh

# The real engine the tests run against: llama.cpp's llama-server from ../shared/engines, built on
# the CPU into build-engine/ once, and the random-weight DeepSeek-V2 GGUFs (scripts/real_engine.sh).
# Without ../shared/engines (exit 3) the real-engine tests say so and skip.
real-engine:
	@sh scripts/real_engine.sh || [ $$? = 3 ]

test-asan: deps
	@ASAN_OPTIONS="log_path=$(CURDIR)/build-asan/san/asan $$ASAN_OPTIONS" UBSAN_OPTIONS="log_path=$(CURDIR)/build-asan/san/ubsan print_stacktrace=1 $$UBSAN_OPTIONS" \
	  $(MAKE) --no-print-directory BUILD=build-asan OPT=-O1 TEST_TIMEOUT=900 SAN_LOGS=$(CURDIR)/build-asan/san \
	  CFLAGS="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" \
	  LDFLAGS="-fsanitize=address,undefined" run-tests

# The client's libcurl read path (TLS, proxies) on the tests that drive real wire and real servers:
# plain http:// takes the client's own path by default (src/client/h1.h), so this runs them again
# through libcurl (realwire and client_paths also switch paths inside themselves).
test-libcurl-path: deps
	@DSPERF_CLIENT_PATH=curl $(MAKE) --no-print-directory run-tests T="$(or $(T),realwire llamacpp bench_ first_hour scenario client_paths)"

# ThreadSanitizer: data races in the client's threads, the sampler, the server's loops, the test
# helpers. tests/tsan.supp holds only proven false positives, each with its reason.
# It leaves out the tests of code that runs on one thread (TSAN_SKIP: test files and names whose
# tests start no server, no load and no thread of their own — parsers, statistics, the simulator,
# the tokenizer but its threads test, history's processes): a race needs two threads, and under
# TSan these took half the pass's CPU. A new test anywhere else runs under TSan by default.
# The real-engine tests (the scenario corpus, drift's K-cache run, llama.cpp's live wire and
# timings) are left out too: their threads are the client's and the sampler's, which the bench, telemetry and monitor tests check under TSan against
# `dsperf serve`, and their cost is llama.cpp's compute (they run under ASan and in `make test`).
TSAN_SKIP := tests/scenario_test tests/drift_live_test tests/llamacpp_live_test tests/llamacpp_timings_test src/metrics/ src/engine/ src/model/ src/plan/ src/compare/ src/common/ src/results/ src/history/ \
  src/client/chunkscan_test src/client/sse_test src/load/arrival_test src/telemetry/prom_test src/telemetry/host_test \
  src/sweep/context_test src/sweep/stability_test src/diagnose/diagnose_account_test src/diagnose/diagnose_cache_test \
  src/report/deployment_test src/report/report_longctx_test src/cli/cmd_sim_test src/dataset/trace_test \
  src/tokenizer/tok_bounds_test tests/fuzz_corpus_test tests/sim_sched_test tests/sim_trace_test \
  tokenizer_vectors tokenizer_roundtrip tokenizer_added tokenizer_single tokenizer_invalid tokenizer_unicode \
  tokenizer_chat tokenizer_load tokenizer_json tokenizer_cli
test-tsan: deps
	@TSAN_OPTIONS="suppressions=$(CURDIR)/tests/tsan.supp log_path=$(CURDIR)/build-tsan/san/tsan exitcode=66 second_deadlock_stack=1 $$TSAN_OPTIONS" \
	  $(MAKE) --no-print-directory BUILD=build-tsan OPT=-O1 TEST_TIMEOUT=900 SAN_LOGS=$(CURDIR)/build-tsan/san \
	  CFLAGS="-O1 -g -fsanitize=thread -fno-omit-frame-pointer" LDFLAGS="-fsanitize=thread" X="$(X) $(TSAN_SKIP)" run-tests

# bash completion and the man page, generated from the binary's --help (they cannot drift from it)
completion: $(BUILD)/dsperf
	@sh scripts/gen_completion.sh $(BUILD)/dsperf > $(BUILD)/dsperf.bash && echo "  GEN $(BUILD)/dsperf.bash (. it, or copy it to /etc/bash_completion.d/dsperf)"
man: $(BUILD)/dsperf
	@sh scripts/gen_man.sh $(BUILD)/dsperf > $(BUILD)/dsperf.1 && echo "  GEN $(BUILD)/dsperf.1 (man -l $(BUILD)/dsperf.1)"

demo: all
	@sh scripts/demo.sh

demo-reasoning: all
	@sh scripts/demo_reasoning.sh

bench: all
	@$(MAKE) --no-print-directory $(BUILD)/dist_bench $(BUILD)/send_floor
	@sh scripts/bench.sh

# the burst part of section 5 alone (scripts/bench_burst.sh): 32, 256 and 1,024 requests due at one instant
bench-burst: all
	@$(MAKE) --no-print-directory $(BUILD)/send_floor
	@bash scripts/bench_burst.sh
# Fuzzing (not part of `make test`): each target of fuzz/fuzz.h under libFuzzer (clang, with ASan and
# UBSan) for FUZZ_SECONDS, starting from tests/fuzz-corpus/<target>; findings land in build-fuzz/.
FUZZ_TARGETS ?= sse chunkscan prom tok_json tok_gguf results
FUZZ_SECONDS ?= 60
FUZZ_CFLAGS := -O1 -g -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
fuzz: deps
	@command -v clang >/dev/null 2>&1 || { echo "make fuzz needs clang and libFuzzer: apt-get install clang libclang-rt-14-dev" >&2; exit 2; }
	@$(MAKE) --no-print-directory BUILD=build-fuzz CC=clang CFLAGS="$(FUZZ_CFLAGS)" fuzz-build
	@sh scripts/fuzz.sh build-fuzz "$(FUZZ_SECONDS)" $(FUZZ_TARGETS)

fuzz-build: $(FUZZ_TARGETS:%=$(BUILD)/fuzz-%)

$(BUILD)/fuzz-%: fuzz/libfuzzer_main.c $(FUZZ_C:%.c=$(BUILD)/%.o) $(LIB_O)
	@echo "  LD $@"
	@$(CC) $(BASEFLAGS) $(CFLAGS) -fsanitize=fuzzer -DFUZZ_TARGET=fuzz_$* -o $@ $^ $(LDLIBS)

# the merge benchmark of multi-host runs (scripts/bench_dist.sh): an MPI program over src/dist
$(BUILD)/dist_bench: $(BUILD)/src/dist/bench/dist_bench.o $(LIB_O)
	@echo "  LD $@"
	@$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# the floor under a burst's spread on this host (scripts/bench_burst.sh): raw loopback sends back to back
$(BUILD)/send_floor: $(BUILD)/src/client/bench/send_floor.o $(BUILD)/src/metrics/stats.o
	@echo "  LD $@"
	@$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

clean:
	rm -rf build build-asan build-tsan build-fuzz dsperf
# build-engine/ (the llama.cpp build, minutes) survives `make clean`: rm -rf build-engine

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
