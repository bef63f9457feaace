#!/bin/sh
# make demo — the main job on the built-in server: start `dsperf serve` on a free loopback port,
# run a short bench ladder (concurrency 1, 8, 32, 64), print each summary, write the results
# under out/, stop the server.
set -eu
BIN=${DSPERF_BIN:-./dsperf}
OUT=${DEMO_OUT:-out}
mkdir -p "$OUT"
LOG="$OUT/serve.log"
"$BIN" serve --port 0 --ttft 50ms --itl 10ms --prefill-per-token 20us --capacity 48 --duration 10m \
    >"$OUT/serve.out" 2>"$LOG" &
SERVE_PID=$!
trap 'kill $SERVE_PID 2>/dev/null || true' EXIT INT TERM
i=0
while ! grep -q 'listening on' "$OUT/serve.out" 2>/dev/null; do
  i=$((i + 1)); [ $i -gt 100 ] && { echo "demo: dsperf serve did not start (see $LOG)" >&2; exit 1; }
  sleep 0.1
done
URL=$(sed -n 's/.*listening on \(http:[^ ]*\).*/\1/p' "$OUT/serve.out")
echo "demo: dsperf serve at $URL (TTFT 50 ms + 20 us/prompt token, ITL 10 ms, 48 requests in service)"
for c in 1 8 32 64; do
  echo
  echo "demo: closed loop, $c concurrent users, 7 s"
  "$BIN" bench --url "$URL" --concurrency "$c" --duration 7s --grace 5s --dataset random:in=512,out=64 \
      --slo ttft=200ms,tpot=15ms --out "$OUT/bench-c$c.json" --save-requests "$OUT/bench-c$c.requests.jsonl"
done
echo
echo "demo: results in $OUT/ (bench-c*.json: dsperf.results/1, vLLM-compatible names)"
