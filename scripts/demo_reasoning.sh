#!/bin/sh
# make demo-reasoning — what a reasoning model's users wait for, and the server's side of every
# request. Part 1: `dsperf serve --engine sim` as DeepSeek-R1 on 8 simulated H200s whose chat
# answers begin with 100..300 reasoning tokens, decoding with one MTP module (the engine's default
# acceptance), and reporting vLLM's per-request metrics; a closed-loop bench prints TTFT beside TTFA
# (time to the first answer token), the tokens and TPOT of each phase, goodput under a TTFA SLO,
# tokens per decode step (stream and server), and the server's split of every TTFT (its queue, its
# prefill, and what it never saw).
# Part 2 (when `make real-engine` built llama.cpp: build-engine/, or $DSPERF_ENGINE_DIR): a bench of
# the real llama-server whose per-request `timings` are joined to the client's records: how much of
# every TTFT the server never saw.
set -eu
BIN=${DSPERF_BIN:-./dsperf}
OUT=${DEMO_OUT:-out}
ENGINE=${DSPERF_ENGINE_DIR:-build-engine}
mkdir -p "$OUT"
"$BIN" serve --port 0 --engine sim --model deepseek-ai/DeepSeek-R1 --gpu h200 --tp 8 --reasoning-tokens 100..300 \
    --mtp 1 --per-request-metrics --duration 10m >"$OUT/serve-r1.out" 2>"$OUT/serve-r1.log" &
SERVE_PID=$!
LLAMA_PID=
trap 'kill $SERVE_PID 2>/dev/null || true; [ -n "$LLAMA_PID" ] && kill $LLAMA_PID 2>/dev/null || true' EXIT INT TERM
. "$(dirname "$0")/serve_url.sh"
wait_serve_url "$OUT/serve-r1.out" demo-reasoning "$OUT/serve-r1.log"
echo "demo-reasoning: simulated DeepSeek-R1 (TP 8, H200, MTP 1) at $URL; answers begin with 100..300 reasoning tokens"
"$BIN" bench --url "$URL" --api chat --concurrency 16 --requests 96 --dataset random:in=512,out=500 \
    --slo ttft=500ms,ttfa=8s --out "$OUT/reasoning.json" --save-requests "$OUT/reasoning.jsonl"
kill $SERVE_PID 2>/dev/null || true
if [ -x "$ENGINE/bin/llama-server" ] && [ -f "$ENGINE/models/tiny.gguf" ]; then
  LOG="$OUT/llama-server.log"
  "$ENGINE/bin/llama-server" -m "$ENGINE/models/tiny.gguf" --host 127.0.0.1 --port 0 -np 4 -c 4096 -t 1 >"$LOG" 2>&1 &
  LLAMA_PID=$!
  PORT=
  for _i in $(seq 1 300); do
    PORT=$(sed -n 's/.*listening, hostname: [^,]*, port: \([0-9]*\).*/\1/p' "$LOG" | head -n 1)
    [ -n "$PORT" ] && curl -sf "http://127.0.0.1:$PORT/health" >/dev/null 2>&1 && break
    PORT=
    sleep 0.2
  done
  if [ -n "$PORT" ]; then
    echo
    echo "demo-reasoning: the real llama.cpp at http://127.0.0.1:$PORT; its timings joined per request"
    "$BIN" bench --url "http://127.0.0.1:$PORT" --concurrency 4 --requests 32 --dataset random:in=256,out=32 \
        --tokenizer "$ENGINE/models/tiny.gguf" --out "$OUT/llamacpp-split.json" --save-requests "$OUT/llamacpp-split.jsonl"
  else
    echo "demo-reasoning: llama-server did not start (see $LOG)" >&2
  fi
else
  echo "demo-reasoning: no llama.cpp in $ENGINE (make real-engine builds it): the per-request split is skipped"
fi
if "$BIN" report --help >/dev/null 2>&1; then
  "$BIN" report "$OUT/reasoning.json" -o "$OUT/reasoning.html"
  echo "demo-reasoning: report in $OUT/reasoning.html"
fi
