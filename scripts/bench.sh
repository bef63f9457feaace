#!/bin/sh
# make bench — benchmarks, measured side by side in one run (never timed assertions in tests).
#  1. client cost: CPU per 1M streamed chunks and chunk rate, against `dsperf serve --itl 0`,
#     at 1,000 and 10,000 concurrent streams;
#  2. timing error at 1,000 streams: measured minus configured ITL (p50/p99);
#  3. the other modules' benchmarks, when present (tokenizer, simulator).
set -eu
BIN=${DSPERF_BIN:-./dsperf}
OUT=${BENCH_OUT:-out/bench}
mkdir -p "$OUT"
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

start_serve() {  # args: serve options; sets URL and SERVE_PID
  "$BIN" serve --port 0 --duration 15m "$@" >"$OUT/serve.out" 2>"$OUT/serve.err" &
  SERVE_PID=$!
  i=0
  while ! grep -q 'listening on' "$OUT/serve.out" 2>/dev/null; do
    i=$((i + 1)); [ $i -gt 100 ] && { echo "bench: serve did not start" >&2; exit 1; }
    sleep 0.1
  done
  URL=$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$OUT/serve.out")
}
stop_serve() { kill "$SERVE_PID" 2>/dev/null || true; wait "$SERVE_PID" 2>/dev/null || true; }
trap 'stop_serve' EXIT INT TERM

field() {  # file, python expression over d
  python3 -c "import json,sys; d=json.load(open('$1')); print($2)" 2>/dev/null || echo "?"
}

echo "== client cost (serve --itl 0; one client thread)"
printf '%-10s %-10s %-12s %-14s %-14s %-10s\n' streams chunks wall_s chunks_per_s cpu_s_per_1M core_share
for streams in 1000 10000; do
  start_serve --ttft 1ms --itl 0 --prefill-per-token 0
  out_tokens=$((2000000 / streams))
  [ $out_tokens -gt 1000 ] && out_tokens=1000
  "$BIN" bench --url "$URL" --concurrency "$streams" --requests "$streams" --timeout 10m \
      --dataset "random:in=8,out=$out_tokens" --quiet --out "$OUT/client-$streams.json" || true
  stop_serve
  f="$OUT/client-$streams.json"
  printf '%-10s %-10s %-12s %-14s %-14s %-10s\n' "$streams" "$(field $f "d['client']['chunks']")" \
    "$(field $f "round(d['duration'],2)")" "$(field $f "int(d['client']['chunks_per_s'])")" \
    "$(field $f "round(d['client']['cpu_us_per_chunk'],3)")" "$(field $f "round(d['client']['cpu_core_share'],2)")"
  echo "   completed $(field $f "d['completed']") failed $(field $f "d['failed']")"
done

echo "== timing error at 1,000 streams (serve --itl 10ms): measured - configured"
start_serve --ttft 50ms --itl 10ms --prefill-per-token 0
"$BIN" bench --url "$URL" --concurrency 1000 --requests 2000 --dataset random:in=8,out=50 --quiet --out "$OUT/timing-1000.json" || true
stop_serve
f="$OUT/timing-1000.json"
echo "   ITL p50 error $(field $f "round((d['median_itl_ms']-10)*1000,1)") us, p99 error $(field $f "round((d['p99_itl_ms']-10)*1000,1)") us; TTFT p50 error $(field $f "round((d['median_ttft_ms']-50)*1000,1)") us"

for extra in scripts/bench_tokenizer.sh scripts/bench_sim.sh; do
  if [ -f "$extra" ]; then echo "== $extra"; sh "$extra" || echo "bench: $extra failed"; fi
done
