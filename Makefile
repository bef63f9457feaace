# dsperf — one Makefile. `make` builds ./dsperf; `make test` runs every test and ends with
# "N passed, N failed"; `make test-asan` the same under ASan/UBSan; `make demo`; `make bench`.
# Layout: src/<module>/*.c is the program (src/main.c the entry point); src/<module>/*_test.c and
# tests/*_test.c are tests, linked with tests/harness.c into one test binary.

PKGS    := libcurl libevent libevent_pthreads jansson libpcre2-8 sqlite3 zlib
CC      ?= cc
OPT     ?= -O2
CFLAGS  ?= $(OPT) -g
WARN    := -Wall -Wextra -Werror -Wno-unused-parameter
BASEFLAGS := -std=c11 -D_GNU_SOURCE -pthread -Isrc -Itests $(WARN) $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
LDLIBS  := $(shell pkg-config --libs $(PKGS) 2>/dev/null) -ldl -lm -pthread

BUILD   ?= build
ALL_C   := $(wildcard src/*.c src/*/*.c)
TEST_C  := $(filter %_test.c,$(ALL_C)) $(wildcard tests/*_test.c)
LIB_C   := $(filter-out src/main.c %_test.c,$(ALL_C))
LIB_O   := $(LIB_C:%.c=$(BUILD)/%.o)
TEST_SUP := $(filter-out %_test.c,$(wildcard tests/*.c))
TEST_O  := $(TEST_C:%.c=$(BUILD)/%.o) $(TEST_SUP:%.c=$(BUILD)/%.o)

.PHONY: all deps build test run-tests test-asan demo bench clean
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

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "  CC $<"
	@$(CC) $(BASEFLAGS) $(CFLAGS) -MMD -MP -c -o $@ $<

# The tests run the real binary (integration tests start `dsperf serve` on loopback).
test: deps
	@$(MAKE) --no-print-directory run-tests

run-tests: $(BUILD)/dsperf $(BUILD)/dsperf_test
	@ulimit -n 65536 2>/dev/null || true; DSPERF_BIN=$(BUILD)/dsperf $(BUILD)/dsperf_test $(T)

test-asan: deps
	@$(MAKE) --no-print-directory BUILD=build-asan OPT=-O1 \
	  CFLAGS="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" \
	  LDFLAGS="-fsanitize=address,undefined" run-tests

demo: all
	@sh scripts/demo.sh

bench: all
	@sh scripts/bench.sh

clean:
	rm -rf build build-asan dsperf

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
