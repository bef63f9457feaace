#!/bin/sh
# sample_trace.sh — writes a small trace in Moonshot's Mooncake format (one JSON object a line:
# timestamp ms, input_length, output_length, hash_ids with one id per 512-token block, the last
# block partial), made here from a seeded generator, not copied from anywhere: 8 agents, each with
# its own 4-block system prompt, run conversations whose every turn resends the history so far
# plus one new block. So `dsperf trace` and the trace replay in the README run as written:
#
#   sh scripts/sample_trace.sh > sample_trace.jsonl      # 240 requests over ~2 minutes
#   dsperf trace mooncake:sample_trace.jsonl
#   dsperf bench --url http://127.0.0.1:8000 --dataset mooncake:sample_trace.jsonl --arrival trace --time-scale 0.25
#
#   sh scripts/sample_trace.sh [REQUESTS] [SEED]
set -eu
N=${1:-240}
SEED=${2:-1}
awk -v n="$N" -v seed="$SEED" '
function rnd(m) { state = (state * 16807) % 2147483647; return state % m }   # Park-Miller: exact in doubles
BEGIN {
  state = seed; t = 0; next_id = 100000
  agents = 8; turns = 6
  for (i = 0; i < n; i++) {
    # a new conversation when none is open for the agent picked, or it has had its turns
    a = rnd(agents)
    if (!(a in turn) || turn[a] >= turns) { turn[a] = 0; hist[a] = "" }
    ids = ""
    for (k = 0; k < 4; k++) ids = ids (ids == "" ? "" : ", ") (a * 100 + k)     # the agent system prompt
    if (hist[a] != "") ids = ids ", " hist[a]                                    # the conversation so far
    new = next_id++
    ids = ids ", " new
    hist[a] = hist[a] (hist[a] == "" ? "" : ", ") new
    nb = split(ids, parts, ", ")
    in_len = nb * 512 - rnd(512)              # the last block partial
    out_len = 64 + rnd(193)
    printf "{\"timestamp\": %d, \"input_length\": %d, \"output_length\": %d, \"hash_ids\": [%s]}\n", t, in_len, out_len, ids
    turn[a]++
    t += 100 + rnd(800)                       # ~500 ms apart on average
  }
}'
