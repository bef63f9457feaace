#!/bin/sh
# The cost of merging a multi-host run (src/dist), measured under mpirun on this host: 4 ranks,
# each with the records 10,000 streams leave after 10 requests of 128 tokens (400k requests,
# 51M chunks in all), gathered and merged exactly as `bench` does, then the summary on rank 0.
# Also 1 and 2 ranks with the same records per rank, to show how the cost grows with ranks.
# Usage: bench_dist.sh [DSPERF_BIN] (the binary is not used: the benchmark is build/dist_bench).
set -u
B=${DIST_BENCH:-build/dist_bench}
[ -x "$B" ] || { echo "bench_dist: $B not built (make build/dist_bench)"; exit 1; }
command -v mpirun >/dev/null 2>&1 || { echo "bench_dist: mpirun not found (apt-get install openmpi-bin)"; exit 1; }
ROOT=""; [ "$(id -u)" = 0 ] && ROOT="--allow-run-as-root"
printf '%-6s %-9s %-9s %-12s %-10s %-10s %-10s %-12s\n' ranks requests chunks bytes/rank B/request gather_s summary_s rank0_MiB
for np in 1 2 4; do
  line=$(mpirun $ROOT --oversubscribe --bind-to none -np $np "$B" --streams 10000 --requests 10 --out 128 2>/dev/null | grep '^ranks=')
  [ -n "$line" ] || { echo "   $np ranks: failed"; continue; }
  get() { echo "$line" | tr ' ' '\n' | sed -n "s/^$1=//p"; }
  printf '%-6s %-9s %-9s %-12s %-10s %-10s %-10s %-12s\n' "$(get ranks)" "$(get requests)" "$(get chunks)" \
    "$(get bytes_per_rank)" "$(get bytes_per_record)" "$(get gather_s)" "$(get summary_s)" "$(get rank0_rss_peak_mib)"
done
echo "   (per rank: 10,000 streams x 10 requests x 128 tokens; bytes/rank = what one follower sends rank 0;"
echo "    gather = from the end of the run to every part merged on rank 0, followers' packing included)"
