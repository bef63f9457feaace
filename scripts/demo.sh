#!/bin/sh
# make demo — the whole product on the built-in simulator: start `dsperf serve --engine sim`
# (DeepSeek-V2-Lite on one H200, max_num_seqs 32) on a free loopback port, sweep closed-loop
# concurrency 1..128 to the knee (about a minute), print the sweep table with the knee and the max
# goodput, the diagnosis, and write an HTML report when `dsperf report` exists.
#
# The engine runs at real time by default (DEMO_SPEEDUP=1): the latencies and tokens/s then are
# what the simulated H200 would give, so the diagnosis can hold them against the H200's HBM
# roofline. DEMO_SPEEDUP=K runs K times faster, but every time is then K times shorter than the
# hardware's and the roofline efficiency reads K times too high.
set -eu
BIN=${DSPERF_BIN:-./dsperf}
OUT=${DEMO_OUT:-out}
SPEEDUP=${DEMO_SPEEDUP:-1}
STEP=${DEMO_STEP:-5s}
mkdir -p "$OUT"
LOG="$OUT/serve.log"
"$BIN" serve --port 0 --engine sim --model deepseek-ai/DeepSeek-V2-Lite --gpu h200 --max-num-seqs 32 \
    --speedup "$SPEEDUP" --duration 10m >"$OUT/serve.out" 2>"$LOG" &
SERVE_PID=$!
trap 'kill $SERVE_PID 2>/dev/null || true' EXIT INT TERM
. "$(dirname "$0")/serve_url.sh"
wait_serve_url "$OUT/serve.out" demo "$LOG"
echo "demo: dsperf serve --engine sim at $URL: DeepSeek-V2-Lite on one simulated H200, max_num_seqs 32"
echo "demo: sweeping closed-loop concurrency 1..128 (x2), $STEP per level, prompts 512 / outputs 128 tokens"
echo
"$BIN" sweep --url "$URL" --concurrency 1..128x2 --duration "$STEP" --grace 20s \
    --dataset random:in=512,out=128 --slo ttft=500ms,tpot=30ms --server-metrics "$URL/metrics" \
    --out "$OUT/sweep.json"
echo
# --gpu: the client cannot see the simulated GPU; --save keeps the findings in the sweep file
"$BIN" diagnose "$OUT/sweep.json" --gpu h200 --save
"$BIN" diagnose "$OUT/sweep.json" --gpu h200 --json >"$OUT/diagnosis.json"
echo
if "$BIN" report --help >/dev/null 2>&1; then
  "$BIN" report "$OUT/sweep.json" -o "$OUT/report.html"
  echo "demo: report in $OUT/report.html (open it in a browser; it needs no network)"
fi
echo "demo: sweep results in $OUT/sweep.json (dsperf.sweep/1: every level's full results), diagnosis in $OUT/diagnosis.json"
