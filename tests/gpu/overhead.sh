#!/bin/sh
# Benchmark (not a test): CPU time of the telemetry sampler thread at a given interval, with GPU
# (when NVML is present), host and server-scrape sampling on. The server is a static vLLM-style
# /metrics page served by python3's http.server on loopback. Goal: < 1% of one core at 100 ms.
# Usage: tests/gpu/overhead.sh [DSPERF_BIN] [DURATION] [INTERVAL]
set -u
BIN=${1:-./dsperf}
DUR=${2:-30s}
IVL=${3:-100ms}
DIR=$(mktemp -d)
trap 'kill $SRV 2>/dev/null; rm -rf "$DIR"' EXIT
{
    echo '# TYPE vllm:num_requests_running gauge'
    echo 'vllm:num_requests_running{model_name="m"} 12'
    echo 'vllm:num_requests_waiting{model_name="m"} 3'
    echo 'vllm:kv_cache_usage_perc{model_name="m"} 0.42'
    echo 'vllm:num_preemptions_total{model_name="m"} 5'
    echo 'vllm:generation_tokens_total{model_name="m"} 123456'
    echo 'vllm:prompt_tokens_total{model_name="m"} 654321'
    i=0
    while [ $i -lt 200 ]; do   # a realistically long page: histogram buckets
        echo "vllm:request_queue_time_seconds_bucket{le=\"$i.0\",model_name=\"m\"} $i"
        i=$((i + 1))
    done
    echo 'vllm:request_queue_time_seconds_sum{model_name="m"} 12.5'
    echo 'vllm:request_queue_time_seconds_count{model_name="m"} 200'
} > "$DIR/metrics"
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# HTTP/1.1 keep-alive, as the engines' servers (uvicorn, axum) do.
(cd "$DIR" && exec python3 -c '
import http.server, sys
class H(http.server.SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()' "$PORT" > /dev/null 2>&1) &
SRV=$!
sleep 1
GPU=""
"$BIN" gpu --count 1 > /dev/null 2>&1 || GPU="--no-gpu"
"$BIN" gpu --record "$DIR/rec.json" --duration "$DUR" --interval "$IVL" $GPU --host-metrics --server-pid $$ \
    --server-metrics "http://127.0.0.1:$PORT/metrics" 2> /dev/null
python3 - "$DIR/rec.json" "$GPU" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))["telemetry"]
s = d["sampler"]
gpus = len(d.get("gpu", []))
srv = d["server"]
print(f"sampler: interval {d['interval_s']*1000:.0f} ms, {s['ticks']} ticks in {s['wall_s']:.1f} s, "
      f"GPUs {gpus}, host on, server scrapes {srv['scrapes']} (errors {srv['scrape_errors']}, source {srv['source']})")
print(f"sampler CPU: {s['cpu_s']:.3f} s = {s['cpu_pct_of_core']:.2f}% of one core "
      f"({s['cpu_s'] / max(s['ticks'], 1) * 1e6:.0f} us per tick)")
PY
