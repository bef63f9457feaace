#!/usr/bin/env bash
# bench_sim — CPU seconds of `dsperf sim` for 100k requests (in 1024 / out 128), including the
# summary and results JSON; the goal is under 2 s. Usage: scripts/bench_sim.sh [dsperf binary]
set -e
BIN=${1:-./dsperf}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
TIMEFORMAT='%U %S'   # bash's time keyword: user and system CPU seconds of the command
for load in "--rate 20/s" "--rate 100/s" "--concurrency 256"; do
  { time "$BIN" sim --model deepseek-v2-lite --gpu h200 --tp 1 --dataset random:in=1024,out=128 \
      $load --requests 100000 --quiet --out "$OUT/r.json" 2>"$OUT/err" ; } 2>"$OUT/t"
  read -r u s < "$OUT/t"
  awk -v u="$u" -v s="$s" -v l="$load" 'BEGIN { c = u + s; printf "sim 100k requests (%s): %.2f s CPU, %.0f requests per CPU-second%s\n", l, c, 100000 / c, c < 2 ? "" : "  (goal: < 2 s)" }'
done
