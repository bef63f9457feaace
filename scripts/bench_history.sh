#!/usr/bin/env bash
# bench_history — the results history's costs, side by side in one run:
#  1. recording: milliseconds per run recorded (200 real `dsperf sim` results documents imported
#     into a fresh database), bytes stored per run;
#  2. queries over 100,000 runs: list, a label query, trend (with its change-point test) and best,
#     wall seconds each (goal: well under a second). The 100,000 runs are copies of the 200 real
#     ones (ids 1..100: --bw-eff 0.85, 101..200: --bw-eff 0.7), laid out so the series has one
#     real step at run 80,001;
#  3. recording one more run into the 100,000-run database (the open's quick_check included).
# Usage: scripts/bench_history.sh [dsperf binary]
set -e
BIN=${1:-./dsperf}
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
TIMEFORMAT='%R'

for i in $(seq 1 200); do
  bw=0.85; [ "$i" -gt 100 ] && bw=0.7
  "$BIN" sim --concurrency 4 --requests 200 --dataset random:in=256,out=32 --seed "$i" --bw-eff "$bw" --quiet \
      --out "$OUT/r$i.json" 2>/dev/null
done
files=$(for i in $(seq 1 200); do echo "$OUT/r$i.json"; done)
TIMEFORMAT='%R %U %S'
read -r t u s < <( { time "$BIN" history --db "$OUT/h.db" import $files --label release=v1 >/dev/null; } 2>&1 )
TIMEFORMAT='%R'
size=$(stat -c %s "$OUT/h.db")
doc=$(stat -c %s "$OUT/r1.json")
awk -v t="$t" -v c="$u" -v c2="$s" -v s="$size" -v d="$doc" 'BEGIN { printf "record: %.1f ms per run wall, %.1f ms CPU (200 runs imported in %.2f s; the rest is the fsync of each commit), %.1f kB stored per run (a %.0f kB results file)\n", t * 1000 / 200, (c + c2) * 1000 / 200, t, s / 200 / 1024, d / 1024 }'

python3 - "$OUT/h.db" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
cols = [r[1] for r in db.execute("PRAGMA table_info(run)") if r[1] not in ("id", "doc_hash", "run_time")]
src = "CASE WHEN n <= 80000 THEN ((n - 1) % 100) + 1 ELSE ((n - 1) % 100) + 101 END"
seq = "WITH RECURSIVE seq(n) AS (SELECT 201 UNION ALL SELECT n + 1 FROM seq WHERE n < 100000) "
db.execute("BEGIN")
db.execute(seq + "INSERT INTO run (id, doc_hash, run_time, %s) SELECT n, r.doc_hash || '.' || n, r.run_time + n, %s "
           "FROM seq JOIN run r ON r.id = %s" % (", ".join(cols), ", ".join("r." + c for c in cols), src))
for table, blob, size in (("run_doc", "doc", "doc_bytes"), ("run_view", "view", "view_bytes")):
    db.execute(seq + "INSERT INTO %s (run_id, %s, %s) SELECT n, t.%s, t.%s FROM seq JOIN %s t ON t.run_id = %s"
               % (table, blob, size, blob, size, table, src))
# run_metric is keyed (name, config, run): its copies are made here and inserted in key order
base = {}
for row in db.execute("SELECT name, config_hash, run_id, run_time, value, lo, hi FROM run_metric"):
    base.setdefault(row[2], []).append(row)
rows = []
for n in range(201, 100001):
    for (name, cfg, _, t, v, lo, hi) in base[((n - 1) % 100) + (1 if n <= 80000 else 101)]:
        rows.append((name, cfg, n, t + n, v, lo, hi))
rows.sort()
db.executemany("INSERT INTO run_metric (name, config_hash, run_id, run_time, value, lo, hi) VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
db.execute(seq + "INSERT INTO run_label (run_id, key, value) SELECT n, 'release', CASE WHEN n <= 80000 THEN 'v1' ELSE 'v2' END FROM seq")
db.execute("UPDATE run_label SET value = 'v2' WHERE run_id > 100 AND run_id <= 200")
db.commit()
db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
PY
echo "100,000 runs: $(($(stat -c %s "$OUT/h.db") / 1048576)) MiB; load average $(cut -d' ' -f1 /proc/loadavg) on $(nproc) cores (wall time waits for a core; CPU time does not)"
printf '%-58s %8s %8s\n' "query over 100,000 runs" "wall s" "CPU s"
q() {  # label, then the history arguments
  label=$1; shift
  TIMEFORMAT='%R %U %S'
  read -r t u s < <( { time "$BIN" history --db "$OUT/h.db" "$@" >"$OUT/q.out" 2>&1; } 2>&1 )
  TIMEFORMAT='%R'
  printf '%-58s %8s %8s\n' "$label" "$t" "$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.2f", u + s }')"
}
q "list, every run (--limit 0)" list --limit 0
q "list label:release=v2 (20,000 runs)" list label:release=v2 --limit 0
q "list, the newest 50" list
q "trend mean_ttft_ms (100,000 runs, change points tested)" trend mean_ttft_ms
grep -E "rose|fell" "$OUT/q.out" | head -3 | sed 's/^/   /'
q "trend mean_ttft_ms label:release=v2 (20,000 runs)" trend mean_ttft_ms label:release=v2
q "trend p99_ttft_ms --json (every run in the JSON)" trend p99_ttft_ms --json
q "best output_throughput" best output_throughput
q "compare --baseline 'label:release=v1 last:5' --candidate latest" compare --baseline 'label:release=v1 last:5' --candidate latest
r="$OUT/extra.json"
"$BIN" sim --concurrency 4 --requests 200 --dataset random:in=256,out=32 --seed 999 --quiet --out "$r" 2>/dev/null
t=$( { time "$BIN" history --db "$OUT/h.db" import "$r" >/dev/null; } 2>&1 )
echo "record one run into the 100,000-run database (no quick_check on open above 64 MiB): $t s"
