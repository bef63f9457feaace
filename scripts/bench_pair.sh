#!/bin/bash
# bench_pair — is client A cheaper per chunk than client B? Paired runs, for a machine whose own
# state moves the answer (on the 2-core VM the same binary gave 6 µs per chunk at one moment and
# 13-15 µs an hour later, and a code-layout change alone moves it by ~1 µs).
#
# Each round runs A and B back to back, in random order, against one `dsperf serve` (10 ms gap),
# and the verdict is the mean of the paired differences with its standard error. Run it with the
# same side twice first to see the method's own bias (it should be ~0 within its error).
#
# usage: scripts/bench_pair.sh ROUNDS "A" "B" [bench options]
#   A, B: a command prefix, e.g. "./dsperf", "/tmp/old/dsperf", "env DSPERF_CLIENT_RXBATCH=0 ./dsperf"
#   bench options default to: --concurrency 32 --requests 64 --dataset random:in=8,out=100
# example: scripts/bench_pair.sh 16 "./dsperf" "env DSPERF_CLIENT_RXBATCH=0 ./dsperf"
set -eu
[ $# -ge 3 ] || { echo "usage: $0 ROUNDS \"A\" \"B\" [bench options]" >&2; exit 2; }
ROUNDS=$1; A=$2; B=$3; shift 3
OPTS=${*:-"--concurrency 32 --requests 64 --dataset random:in=8,out=100"}
SERVE_BIN=${DSPERF_BIN:-./dsperf}
OUT=$(mktemp -d "${TMPDIR:-/tmp}/dsperf-pair.XXXXXX")
"$SERVE_BIN" serve --port 0 --duration 1h --ttft 10ms --itl 10ms --prefill-per-token 0 >"$OUT/serve.out" 2>&1 &
SERVE_PID=$!
trap 'kill $SERVE_PID 2>/dev/null || true' EXIT INT TERM
. "$(dirname "$0")/serve_url.sh"
wait_serve_url "$OUT/serve.out" bench_pair
run() { $1 bench --url "$URL" $OPTS --quiet --out "$2" >/dev/null 2>&1 || true; }
for r in $(seq 1 "$ROUNDS"); do
  if [ $((RANDOM % 2)) = 0 ]; then run "$A" "$OUT/a-$r.json"; run "$B" "$OUT/b-$r.json"
  else run "$B" "$OUT/b-$r.json"; run "$A" "$OUT/a-$r.json"; fi
done
python3 - "$OUT" "$ROUNDS" <<'PY'
import json, statistics, sys
out, n = sys.argv[1], int(sys.argv[2])
def cost(side, r):
    try: return json.load(open(f"{out}/{side}-{r}.json"))["client"]["cpu_us_per_chunk"]
    except Exception: return None
pairs = [(cost("a", r), cost("b", r)) for r in range(1, n + 1)]
pairs = [(a, b) for a, b in pairs if a is not None and b is not None]
if len(pairs) < 2: sys.exit("bench_pair: fewer than 2 complete rounds")
a = [p[0] for p in pairs]; b = [p[1] for p in pairs]; d = [x - y for x, y in pairs]
se = statistics.stdev(d) / len(d) ** 0.5
print(f"rounds {len(pairs)}  A median {statistics.median(a):.2f} us/chunk  B median {statistics.median(b):.2f} us/chunk")
print(f"A - B: mean {statistics.mean(d):+.2f} us/chunk, standard error {se:.2f} (sd {statistics.stdev(d):.2f})")
PY
