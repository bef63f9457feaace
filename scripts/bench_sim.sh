#!/usr/bin/env bash
# bench_sim — CPU seconds of `dsperf sim` for 100k requests (in 1024 / out 128), including the
# summary and results JSON; the goal is under 2 s, also with every feature on (engine profile,
# DP attention + EP, MTP, prefix caching, PD disaggregation). Usage: scripts/bench_sim.sh [dsperf binary]
set -e
BIN=${1:-./dsperf}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
TIMEFORMAT='%U %S'   # bash's time keyword: user and system CPU seconds of the command
run() {  # label, args...
  local label=$1; shift
  { time "$BIN" sim --requests 100000 --quiet --out "$OUT/r.json" "$@" 2>"$OUT/err" ; } 2>"$OUT/t" || { echo "sim failed: $(cat "$OUT/err")"; return; }
  read -r u s < "$OUT/t"
  awk -v u="$u" -v s="$s" -v l="$label" 'BEGIN { c = u + s; printf "sim 100k requests (%s): %.2f s CPU, %.0f requests per CPU-second%s\n", l, c, 100000 / c, c < 2 ? "" : "  (goal: < 2 s)" }'
}
V2L="--model deepseek-v2-lite --gpu h200 --tp 1 --dataset random:in=1024,out=128"
for load in "--rate 20/s" "--rate 100/s" "--concurrency 256"; do
  run "$load" $V2L $load
done
# llama.cpp b4747 (its expert loop, ubatches, the idle slots' window), as llama-server -np 32
run "llama.cpp b4747, V2-Lite on H100, -np 32, --concurrency 32" --engine-profile llamacpp-b4747 --max-num-seqs 32 \
  --model deepseek-v2-lite --gpu h100 --dataset random:in=256,out=128 --concurrency 32
# llama-server's default single slot (-np 1): a step per token, 12.8 M steps (the step memo's case)
run "llama.cpp b4747, V2-Lite on H100, -np 1, --concurrency 32" --engine-profile llamacpp-b4747 \
  --model deepseek-v2-lite --gpu h100 --dataset random:in=256,out=128 --concurrency 32
FEAT="--engine-profile sglang --model deepseek-v3 --gpu h200 --tp 8 --dp 8 --ep 8 --mtp 2 --prefix-caching on --dataset random:in=1024,out=128"
run "V3 8xH200 DP8 EP8 MTP2 prefix caching, --rate 100/s" $FEAT --rate 100/s
run "the same + PD, 2 prefill instances" $FEAT --rate 100/s --pd-prefill 2
