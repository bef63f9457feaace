#!/bin/sh
# make bench — benchmarks, measured side by side in one run (never timed assertions in tests).
#  1. client cost: CPU per 1M streamed chunks and chunk rate, against `dsperf serve --itl 0`,
#     at 1,000 and 10,000 concurrent streams;
#  2. client CPU per chunk when chunks arrive one at a time (10 ms gap) at 32, 256 and 1,000 streams:
#     the own read path with kernel receive stamps and gathered reads, batched in one io_uring call
#     (default) or one recvmsg per socket, beside read-time stamps with one wake-up per chunk, and
#     the libcurl path (what TLS and proxies take);
#  3. timing error at 1, 64, 512 and 1,000 streams: measured minus configured TTFT and ITL, with the
#     server's own emission lateness beside it, kernel stamps beside read stamps;
#  4. the other modules' benchmarks, when present (tokenizer, simulator, multi-host merge, trace prompt
#     building, results history);
#  5. the read paths side by side (scripts/bench_client.sh, issue 27): CPU per chunk at 32 streams
#     with a 5 ms gap (batched reads from K ready sockets, K measured on the host, beside always and
#     never batched), memory per stream at 1,000 / 10,000 / 100,000 streams (100,000 as several
#     client+server pairs where the descriptor limit cannot be raised to hold it in one process), the
#     send-time spread of bursts of 32, 256 and 1,024 requests (scripts/bench_burst.sh: prepared ahead
#     vs built when due vs over threads, beside the host's floor for one thread and for the threads);
#     OLD_BIN=path adds a previous build as "old".
set -eu
BIN=${DSPERF_BIN:-./dsperf}
OUT=${BENCH_OUT:-out/bench}
mkdir -p "$OUT"
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

. "$(dirname "$0")/serve_url.sh"
start_serve() {  # args: serve options; sets URL and SERVE_PID
  "$BIN" serve --port 0 --duration 15m "$@" >"$OUT/serve.out" 2>"$OUT/serve.err" &
  SERVE_PID=$!
  wait_serve_url "$OUT/serve.out" bench "$OUT/serve.err"
}
stop_serve() { kill "$SERVE_PID" 2>/dev/null || true; wait "$SERVE_PID" 2>/dev/null || true; }
trap 'stop_serve' EXIT INT TERM

field() {  # file, python expression over d
  python3 -c "import json,sys; d=json.load(open('$1')); print($2)" 2>/dev/null || echo "?"
}

# BENCH_SECTIONS="2 3" runs only those sections (default: all five)
want() { case " ${BENCH_SECTIONS:-1 2 3 4 5} " in *" $1 "*) return 0 ;; esac; return 1; }

CORES=$(nproc 2>/dev/null || echo 1)
# serve's loops: one per 4 cores up to 4, so the server is not the bottleneck being measured
SERVE_THREADS=$((CORES / 4)); [ $SERVE_THREADS -lt 1 ] && SERVE_THREADS=1; [ $SERVE_THREADS -gt 4 ] && SERVE_THREADS=4
echo "   $CORES cores; dsperf serve --threads $SERVE_THREADS; bench --client-threads 1 for client cost, auto for timing"

if want 1; then
echo "== client cost (serve --itl 0; one client thread)"
printf '%-10s %-10s %-12s %-14s %-14s %-10s\n' streams chunks wall_s chunks_per_s cpu_s_per_1M core_share
for streams in 1000 10000; do
  start_serve --threads "$SERVE_THREADS" --ttft 1ms --itl 0 --prefill-per-token 0
  out_tokens=$((2000000 / streams))
  [ $out_tokens -gt 1000 ] && out_tokens=1000
  "$BIN" bench --url "$URL" --concurrency "$streams" --requests "$streams" --timeout 10m --client-threads 1 \
      --dataset "random:in=8,out=$out_tokens" --quiet --out "$OUT/client-$streams.json" || true
  stop_serve
  f="$OUT/client-$streams.json"
  printf '%-10s %-10s %-12s %-14s %-14s %-10s\n' "$streams" "$(field $f "d['client']['chunks']")" \
    "$(field $f "round(d['duration'],2)")" "$(field $f "int(d['client']['chunks_per_s'])")" \
    "$(field $f "round(d['client']['cpu_us_per_chunk'],3)")" "$(field $f "round(d['client']['cpu_core_share'],2)")"
  echo "   completed $(field $f "d['completed']") failed $(field $f "d['failed']")"
done
fi

if want 2; then
# Client cost when chunks arrive one at a time: at a 10 ms gap each chunk of a stream comes alone.
# Four ways, in one run (noise hits all of them; each run starts with a different way, so none
# always goes first), 5 runs each, median shown:
#   batch   (default) the own read path (src/client/h1.c), chunks stamped by the kernel
#           (SO_TIMESTAMPNS, src/client/rxstamp.h), the loop reads for a window after each wake-up
#           instead of waking per chunk, and reads the sockets that woke it in one io_uring call
#           (src/client/rxbatch.h);
#   gather  the same with one recvmsg per socket (DSPERF_CLIENT_RXBATCH=0);
#   each    stamped when read, one wake-up per chunk (DSPERF_CLIENT_RXSTAMP=0);
#   curl    libcurl reads, stamped at its handover, one wake-up per chunk (DSPERF_CLIENT_PATH=curl).
# CPU time of the client process (getrusage), so a busy machine's other jobs do not count.
echo "== client CPU per chunk, chunks one at a time (serve --itl 10ms): batch (io_uring reads) vs gather (kernel stamps) vs each (read stamps) vs curl (the libcurl path)"
printf '%-8s %-8s %-9s %-16s %-22s %-30s\n' streams mode chunks cpu_us_per_chunk "ITL err p50/p99 (us)" "cpu_us runs"
MODES="batch gather each curl"
for streams in 32 256 1000; do
  start_serve --threads "$SERVE_THREADS" --ttft 10ms --itl 10ms --prefill-per-token 0
  for run in 1 2 3 4 5; do
    order=$(echo $MODES $MODES | cut -d' ' -f$(( (run - 1) % 4 + 1 ))-$(( (run - 1) % 4 + 4 )))
    for mode in $order; do
      rx=1; path=own; rb=1
      [ $mode = gather ] && rb=0
      [ $mode = each ] && rx=0
      [ $mode = curl ] && path=curl
      DSPERF_CLIENT_RXSTAMP=$rx DSPERF_CLIENT_RXBATCH=$rb DSPERF_CLIENT_PATH=$path "$BIN" bench --url "$URL" --concurrency "$streams" \
          --requests $((streams * 2)) --dataset random:in=8,out=100 --quiet --out "$OUT/chunk-$streams-$mode-$run.json" || true
    done
  done
  stop_serve
  for mode in $MODES; do
    runs=""; for run in 1 2 3 4 5; do runs="$runs $(field "$OUT/chunk-$streams-$mode-$run.json" "round(d['client']['cpu_us_per_chunk'],2)")"; done
    med=$(echo $runs | tr ' ' '\n' | sort -g | sed -n 3p)
    f="$OUT/chunk-$streams-$mode-3.json"
    printf '%-8s %-8s %-9s %-16s %-22s %-30s\n' "$streams" "$mode" "$(field $f "d['client']['chunks']")" "$med" \
      "$(field $f "round((d['median_itl_ms']-10)*1000)")/$(field $f "round((d['p99_itl_ms']-10)*1000)")" "$runs"
  done
done
fi

if want 3; then
# Timing error, the client's precision against `dsperf serve`'s known timing (TTFT 50 ms, ITL
# 10 ms): 1, 64 and 512 streams (what the tests once asserted on wall clocks, which no test may do
# on shared cores), and 1,000 closed-loop streams of 100 tokens, 3 rounds (the first opens the
# connections, and every round ends with 1,000 streams finishing and resubmitting at once). The
# server's own lateness (due time to write) says how much of the error is the server's.
echo "== timing error (serve --ttft 50ms --itl 10ms): measured - configured; kernel stamps + gathering (default) and read stamps (DSPERF_CLIENT_RXSTAMP=0), alternating"
for spec in 1:20:20 64:256:20 512:1024:10 1000:3000:100; do
  streams=${spec%%:*}; rest=${spec#*:}; requests=${rest%%:*}; out_tokens=${rest#*:}
  start_serve --threads "$SERVE_THREADS" --ttft 50ms --itl 10ms --prefill-per-token 0
  for rx in 1 0; do
    sfx=""; [ $rx = 0 ] && sfx="-read"
    DSPERF_CLIENT_RXSTAMP=$rx "$BIN" bench --url "$URL" --concurrency "$streams" --requests "$requests" --dataset "random:in=8,out=$out_tokens" --quiet \
        --percentiles 50,90,99,99.9 --out "$OUT/timing-$streams$sfx.json" || true
  done
  python3 - "$URL/metrics" > "$OUT/timing-$streams.late" 2>/dev/null <<'PY' || echo "? ?" > "$OUT/timing-$streams.late"
import sys, urllib.request
b = {}
for line in urllib.request.urlopen(sys.argv[1], timeout=5).read().decode().splitlines():
    if line.startswith('dsperf_emit_lateness_seconds_bucket{le="'):
        b[line.split('"')[1]] = float(line.split()[-1])
tot = b['+Inf']
print("%.1f%% %.1f%%" % (100 * b['5e-05'] / tot, 100 * b['0.00025'] / tot))
PY
  stop_serve
  f="$OUT/timing-$streams.json"
  err() { field $f "round((d['$1']-$2)*1000)"; }
  read -r late50 late250 < "$OUT/timing-$streams.late"
  echo "   $streams streams: ITL error p50 $(err median_itl_ms 10) us, p99 $(err p99_itl_ms 10) us, p99.9 $(err p99.9_itl_ms 10) us; TTFT error p50 $(err median_ttft_ms 50) us, p99 $(err p99_ttft_ms 50) us; server emissions within 50 us of due $late50, within 250 us $late250"
  f="$OUT/timing-$streams-read.json"
  echo "   $(printf '%*s' ${#streams} '')  read stamps: ITL error p50 $(err median_itl_ms 10) us, p99 $(err p99_itl_ms 10) us, p99.9 $(err p99.9_itl_ms 10) us; TTFT error p50 $(err median_ttft_ms 50) us, p99 $(err p99_ttft_ms 50) us"
done
fi
echo "   (goal at 1,000 streams: ITL p99 < 200 us; $(field "$OUT/timing-1000.json" "d['itl_samples']") gaps, $(field "$OUT/timing-1000.json" "d['client']['threads']") client threads)"

if want 5; then
echo "== the client's read paths (scripts/bench_client.sh)"
DSPERF_BIN="$BIN" BENCH_OUT="$OUT" bash "$(dirname "$0")/bench_client.sh" || echo "bench: bench_client.sh failed"
fi

if want 4; then
for extra in scripts/bench_tokenizer.sh scripts/bench_sim.sh scripts/bench_dist.sh scripts/bench_trace.sh scripts/bench_history.sh; do
  if [ -f "$extra" ]; then echo "== $extra"; bash "$extra" "$BIN" || echo "bench: $extra failed"; fi
done
fi
