#!/bin/bash
# bench_client — the client's read paths side by side in one run (issue 27): CPU per chunk at 32
# streams with a 5 ms gap, memory per stream, the send-time spread of bursts (bench_burst.sh), and the timing error
# against the server's configured timing (which `dsperf serve` keeps to within its own lateness,
# printed beside). Run by `make bench` (section 5); on another host, alone:
#
#   sh scripts/bench_client.sh                     # this checkout's ./dsperf
#   OLD_BIN=/path/to/previous/dsperf sh scripts/bench_client.sh   # + that binary as "old"
#
# Paths compared (a row per path; a path that is not there prints "none"):
#   own     the default for plain http://: the client's own HTTP/1.1 reads (src/client/h1.c),
#           kernel receive stamps, gathered wake-ups, a wake-up's sockets read in one io_uring call
#   own-1   the same with one recvmsg per socket (DSPERF_CLIENT_RXBATCH=0)
#   curl    libcurl reads, stamped when it hands the bytes over (DSPERF_CLIENT_PATH=curl: the path
#           TLS and proxies take)
#   old     OLD_BIN, e.g. a build before the own path (libcurl with recv()/poll() replaced process-wide)
#   vllm    vLLM's benchmark client (`vllm bench serve`), when installed
# The lines that start with "RESULT" are the ones to compare between hosts.
set -eu
BIN=${DSPERF_BIN:-./dsperf}
OUT=${BENCH_OUT:-out/bench}/client
OLD_BIN=${OLD_BIN:-}
ROUNDS=${ROUNDS:-5}
mkdir -p "$OUT"
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
. "$(dirname "$0")/serve_url.sh"
start_serve() {
  "$BIN" serve --port 0 --duration 15m "$@" >"$OUT/serve.out" 2>"$OUT/serve.err" &
  SERVE_PID=$!
  wait_serve_url "$OUT/serve.out" bench_client "$OUT/serve.err"
}
stop_serve() { kill "$SERVE_PID" 2>/dev/null || true; wait "$SERVE_PID" 2>/dev/null || true; }
trap 'stop_serve' EXIT INT TERM
field() { python3 -c "import json,sys; d=json.load(open('$1')); print($2)" 2>/dev/null || echo "?"; }
CORES=$(nproc 2>/dev/null || echo 1)
SERVE_THREADS=$((CORES / 4)); [ $SERVE_THREADS -lt 1 ] && SERVE_THREADS=1; [ $SERVE_THREADS -gt 4 ] && SERVE_THREADS=4
# The server's lateness histogram (due time to write): how much of a timing error is the server's.
lateness() {
  python3 - "$URL/metrics" 2>/dev/null <<'PY' || echo "?"
import sys, urllib.request
b = {}
for line in urllib.request.urlopen(sys.argv[1], timeout=5).read().decode().splitlines():
    if line.startswith('dsperf_emit_lateness_seconds_bucket{le="'):
        b[line.split('"')[1]] = float(line.split()[-1])
tot = b['+Inf']
print("%.1f%% within 50 us, %.1f%% within 250 us" % (100 * b['5e-05'] / tot, 100 * b['0.00025'] / tot))
PY
}
echo "   $CORES cores, load average $(cut -d' ' -f1-3 /proc/loadavg); serve --threads $SERVE_THREADS; $(ulimit -n) open files allowed"

# ---- 1. CPU per chunk: 32 streams, 5 ms gap, 100 tokens each, ROUNDS rounds in rotating order ----
MODES="own own-1 curl"
[ -n "$OLD_BIN" ] && [ -x "$OLD_BIN" ] && MODES="$MODES old"
echo "== CPU per chunk, 32 streams, serve --ttft 10ms --itl 5ms, 64 requests x 100 tokens, median of $ROUNDS rounds"
start_serve --threads "$SERVE_THREADS" --ttft 10ms --itl 5ms --prefill-per-token 0
run_mode() {  # mode round
  local b="$BIN" env=""
  case $1 in
    own-1) env="DSPERF_CLIENT_RXBATCH=0" ;;
    curl) env="DSPERF_CLIENT_PATH=curl" ;;
    old) b="$OLD_BIN" ;;
  esac
  env $env "$b" bench --url "$URL" --concurrency 32 --requests 64 --dataset random:in=8,out=100 --quiet \
      --percentiles 50,99 --out "$OUT/cpu-$1-$2.json" >/dev/null 2>&1 || true
}
n_modes=$(echo $MODES | wc -w)
for r in $(seq 1 "$ROUNDS"); do
  rot=$(( (r - 1) % n_modes + 1 ))
  order=$(echo $MODES $MODES | cut -d' ' -f$rot-$((rot + n_modes - 1)))
  for m in $order; do run_mode "$m" "$r"; done
done
late=$(lateness)
stop_serve
printf '%-7s %-10s %-8s %-24s %-24s %s\n' path us/chunk ratio "ITL err p50/p99 (us)" "TTFT err p50/p99 (us)" "runs (us/chunk)"
own_med=""
for m in $MODES vllm; do
  if [ $m = vllm ]; then
    if command -v vllm >/dev/null 2>&1; then echo "vllm    (installed: run it against the same server by hand; not automated here)"; else echo "vllm    none (vLLM is not installed here)"; fi
    continue
  fi
  runs=""; for r in $(seq 1 "$ROUNDS"); do runs="$runs $(field "$OUT/cpu-$m-$r.json" "round(d['client']['cpu_us_per_chunk'],2)")"; done
  med=$(echo $runs | tr ' ' '\n' | sort -g | sed -n "$(( (ROUNDS + 1) / 2 ))p")
  [ $m = own ] && own_med=$med
  ratio=$(python3 -c "print('%.2fx' % ($med / $own_med))" 2>/dev/null || echo "?")
  f="$OUT/cpu-$m-$(( (ROUNDS + 1) / 2 )).json"
  itl="$(field $f "round((d['median_itl_ms']-5)*1000)")/$(field $f "round((d['p99_itl_ms']-5)*1000)")"
  ttft="$(field $f "round((d['median_ttft_ms']-10)*1000)")/$(field $f "round((d['p99_ttft_ms']-10)*1000)")"
  printf '%-7s %-10s %-8s %-24s %-24s %s\n' "$m" "$med" "$ratio" "$itl" "$ttft" "$runs"
done
echo "   server emissions: $late"
echo "RESULT cpu_us_per_chunk_32streams_5ms own=$own_med (goal <= 8 on 2 cores, <= 5 on 16); ratios above are per path / own"

# ---- 2. memory per stream: N streams open at once (2 s each: 10 tokens 200 ms apart) ----
# RSS of the client process (ru_maxrss) at N streams minus at 1,000, per extra stream: the client's
# connection state, parser and the records' chunk arrays (the kernel's socket buffers are not in it).
# More than ~28,000 streams to one port need more source addresses: DSPERF_CLIENT_LOCAL_ADDRS
# spreads them over 127.0.0.1..N. N goes to 100,000 where `ulimit -n` allows (client + server fds).
echo "== memory per stream (serve --ttft 50ms --itl 200ms, 10 tokens: every stream open at once)"
FDS=$(ulimit -n)
LEVELS="1000 10000"
for n in 30000 100000; do [ "$FDS" -gt $((n + 1000)) ] && LEVELS="$LEVELS $n"; done
printf '%-8s %-7s %-10s %-10s %-14s %-26s %s\n' streams path completed rss_MiB "KiB/stream" "ITL err p50/p99 (us)" "server emissions"
for m in own curl; do
  base=""
  for n in $LEVELS; do
    env=""; [ $m = curl ] && env="DSPERF_CLIENT_PATH=curl"
    start_serve --threads "$SERVE_THREADS" --ttft 50ms --itl 200ms --prefill-per-token 0
    addrs=$(( n / 20000 + 1 ))
    env $env DSPERF_CLIENT_LOCAL_ADDRS=$addrs "$BIN" bench --url "$URL" --concurrency "$n" --requests "$n" --client-threads 1 \
        --dataset random:in=8,out=10 --timeout 10m --quiet --percentiles 50,99 --out "$OUT/mem-$m-$n.json" >/dev/null 2>&1 || true
    late=$(lateness)
    stop_serve
    f="$OUT/mem-$m-$n.json"
    rss=$(field $f "d['client']['max_rss_kib']")
    [ -z "$base" ] && base=$rss && bn=$n
    per=$(python3 -c "print('%.2f' % (($rss - $base) / ($n - $bn))) if $n > $bn else print('(base)')" 2>/dev/null || echo "?")
    printf '%-8s %-7s %-10s %-10s %-14s %-26s %s\n' "$n" "$m" "$(field $f "d['completed']")" "$(python3 -c "print(round($rss/1024))" 2>/dev/null || echo ?)" \
      "$per" "$(field $f "round((d['median_itl_ms']-200)*1000)")/$(field $f "round((d['p99_itl_ms']-200)*1000)")" "$late"
    [ $m = own ] && [ $n = 10000 ] && own10k=$per && own10k_itl99=$(field $f "round((d['p99_itl_ms']-200)*1000)")
  done
  [ $m = own ] && [ "${CLIENT_BENCH_CURL_MEM:-1}" = 0 ] && break
done
echo "RESULT memory_per_stream own=${own10k:-?} KiB (1,000 -> 10,000 streams; goal <= 10 KB); ITL err p99 at 10,000 streams ${own10k_itl99:-?} us (goal < 200 where the server keeps up)"

# ---- 3. burst: 32, 256 and 1,024 requests due at one instant (scripts/bench_burst.sh) ----
# The ways of sending side by side: prepared ahead (the default), built and sent when due (the
# client before), dealt over client threads, the libcurl path, OLD_BIN, and the floor (raw
# loopback sends back to back on this host).
stop_serve
DSPERF_BIN="$BIN" BENCH_OUT="${BENCH_OUT:-out/bench}" OLD_BIN="$OLD_BIN" bash "$(dirname "$0")/bench_burst.sh" || echo "burst: bench_burst.sh failed"
