#!/bin/sh
# make fuzz — runs each libFuzzer target (built by the Makefile into BUILD/fuzz-<target>) for SECONDS,
# starting from the regression corpus tests/fuzz-corpus/<target>/. New inputs go to
# BUILD/corpus/<target>/ (the repository's corpus is only read); an input that crashes, trips ASan or
# UBSan, leaks, or breaks the target's property is written to BUILD/crashes/<target>/. Exit 1 if any.
# Usage: sh scripts/fuzz.sh BUILD SECONDS TARGET...
set -u
BUILD=$1; SECONDS_EACH=$2; shift 2
failed=0
for t in "$@"; do
  bin="$BUILD/fuzz-$t"
  [ -x "$bin" ] || { echo "fuzz: $bin is missing (make fuzz builds it)" >&2; exit 2; }
  mkdir -p "$BUILD/corpus/$t" "$BUILD/crashes/$t"
  dict=""
  [ -f "fuzz/$t.dict" ] && dict="-dict=fuzz/$t.dict"
  echo "== fuzz $t for ${SECONDS_EACH}s"
  # -rss_limit_mb: a hostile input must not make a loader grow without bound (the tokenizer's id table
  # did); -timeout: nor spin. The log keeps libFuzzer's status lines; the summary is its last one.
  "$bin" -max_total_time="$SECONDS_EACH" -rss_limit_mb=2048 -timeout=20 -print_final_stats=1 $dict \
      -artifact_prefix="$BUILD/crashes/$t/" "$BUILD/corpus/$t" "tests/fuzz-corpus/$t" >"$BUILD/fuzz-$t.log" 2>&1
  rc=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$BUILD/fuzz-$t.log")
  found=$(ls "$BUILD/crashes/$t" | wc -l)
  echo "   ${runs:-?} inputs run, corpus $(ls "$BUILD/corpus/$t" | wc -l) new files, findings: $found (log: $BUILD/fuzz-$t.log)"
  if [ $rc -ne 0 ] || [ "$found" -gt 0 ]; then
    failed=1
    grep -m1 -E "ERROR: |runtime error|fuzz_[a-z_]+:" "$BUILD/fuzz-$t.log" | sed 's/^/   /'
    echo "   reproduce: $bin $BUILD/crashes/$t/<file>; once fixed, copy the file to tests/fuzz-corpus/$t/"
  fi
done
exit $failed
