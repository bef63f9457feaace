#!/bin/bash
# bench_client — the client's read paths side by side in one run (issue 27): CPU per chunk at 32
# streams with a 5 ms gap, memory per stream, the send-time spread of bursts (bench_burst.sh), and the timing error
# against the server's configured timing (which `dsperf serve` keeps to within its own lateness,
# printed beside). Run by `make bench` (section 5); on another host, alone:
#
#   sh scripts/bench_client.sh                     # this checkout's ./dsperf
#   OLD_BIN=/path/to/previous/dsperf sh scripts/bench_client.sh   # + that binary as "old"
#
#   CLIENT_BENCH_SECTIONS="cpu mem burst"   the sections to run (the default: all three)
#   ROUNDS=5   rounds of the CPU section;  MEM_LEVELS="1000 10000 100000"   streams of the memory section
#
# Paths compared (a row per path; a path that is not there prints "none"):
#   own     the default for plain http://: the client's own HTTP/1.1 reads (src/client/h1.c),
#           kernel receive stamps, gathered wake-ups, a wake-up's sockets read in one io_uring call
#           when at least K are ready (K measured at the client's start: one recvmsg against an
#           io_uring_enter's fixed and per-read cost on this host, src/client/rxbatch.h; printed)
#   own-b   the same, every wake-up with 2 or more ready sockets batched (DSPERF_CLIENT_RXBATCH_MIN=2:
#           the rule before K)
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
SECTIONS=${CLIENT_BENCH_SECTIONS:-cpu mem burst}
section() { case " $SECTIONS " in *" $1 "*) return 0 ;; esac; return 1; }
mkdir -p "$OUT"
. "$(dirname "$0")/fd_limit.sh"
raise_fd_limit
. "$(dirname "$0")/serve_url.sh"
start_serve() {
  "$BIN" serve --port 0 --duration 15m "$@" >"$OUT/serve.out" 2>"$OUT/serve.err" &
  SERVE_PID=$!
  wait_serve_url "$OUT/serve.out" bench_client "$OUT/serve.err"
}
SERVE_PID=""
stop_serve() { [ -n "$SERVE_PID" ] || return 0; kill "$SERVE_PID" 2>/dev/null || true; wait "$SERVE_PID" 2>/dev/null || true; }
SERVE_PIDS=""
stop_all() { stop_serve; for p in $SERVE_PIDS; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done; SERVE_PIDS=""; }
trap 'stop_all' EXIT INT TERM
field() { python3 -c "import json,sys; d=json.load(open('$1')); print($2)" 2>/dev/null || echo "?"; }
CORES=$(nproc 2>/dev/null || echo 1)
SERVE_THREADS=$((CORES / 4)); [ $SERVE_THREADS -lt 1 ] && SERVE_THREADS=1; [ $SERVE_THREADS -gt 4 ] && SERVE_THREADS=4
# The server's lateness histogram (due time to write), summed over the servers given (default
# $URL): how much of a timing error is the server's.
lateness() {
  python3 - "${@:-$URL}" 2>/dev/null <<'PY' || echo "?"
import sys, urllib.request
b = {}
for url in sys.argv[1:]:
    for line in urllib.request.urlopen(url + "/metrics", timeout=20).read().decode().splitlines():
        if line.startswith('dsperf_emit_lateness_seconds_bucket{le="'):
            k = line.split('"')[1]
            b[k] = b.get(k, 0) + float(line.split()[-1])
tot = b['+Inf']
le = sorted((float(k), v) for k, v in b.items() if k != '+Inf')
p99 = next((k for k, v in le if v >= 0.99 * tot), float('inf'))
print("%.1f%% within 50 us, %.1f%% within 250 us, p99 <= %s" % (100 * b['5e-05'] / tot, 100 * b['0.00025'] / tot,
      ("%g ms" % (p99 * 1e3)) if p99 != float('inf') else "> %g s" % le[-1][0]))
PY
}
echo "   $CORES cores, load average $(cut -d' ' -f1-3 /proc/loadavg); serve --threads $SERVE_THREADS; $(ulimit -n) open files allowed (hard limit $(ulimit -Hn)${FD_LIMIT_WHY:+; $FD_LIMIT_WHY})"

# ---- 1. CPU per chunk: 32 streams, 5 ms gap, 100 tokens each, ROUNDS rounds in rotating order ----
if section cpu; then
MODES="own own-b own-1 curl"
[ -n "$OLD_BIN" ] && [ -x "$OLD_BIN" ] && MODES="$MODES old"
echo "== CPU per chunk, 32 streams, serve --ttft 10ms --itl 5ms, 64 requests x 100 tokens, median of $ROUNDS rounds"
start_serve --threads "$SERVE_THREADS" --ttft 10ms --itl 5ms --prefill-per-token 0
run_mode() {  # mode round
  local b="$BIN" env=""
  case $1 in
    own-b) env="DSPERF_CLIENT_RXBATCH_MIN=2" ;;
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
f="$OUT/cpu-own-1.json"
echo "   own's rule on this host: batch $(field $f "('from %d ready sockets' % d['client']['read_batch']['min_sockets']) if d['client']['read_batch']['min_sockets'] else 'never (a read in the ring costs more than a recvmsg)'") (one recvmsg $(field $f "round(d['client']['read_batch']['recvmsg_us'],2)") us; io_uring_enter $(field $f "round(d['client']['read_batch']['enter_us'],2)") us + $(field $f "round(d['client']['read_batch']['per_read_us'],2)") us per read)"
echo "RESULT cpu_us_per_chunk_32streams_5ms own=$own_med (goal <= 8 on 2 cores, <= 5 on 16); ratios above are per path / own"
fi

# ---- 2. memory per stream: N streams open at once ----
# N requests arrive at a constant rate (open loop) over S = max(G, N / MEM_RATE) (MEM_RATE default
# 2,500 a second: what one server thread on the 2-core VM accepts beside its streams; at 10,000
# within 1 s it fell up to 1 s behind), each streams ceil(S / G) + MEM_TOKENS - 1 tokens from
# serve --ttft 50ms --itl G (MEM_TOKENS default 4), so every stream is open at once (each outlasts
# the arrivals by MEM_TOKENS - 1 gaps) and the emissions are spread evenly over the gap (N started
# at once make the server write N chunks back to back every G: its lateness, not the client's
# error). G = MEM_ITL (default 1s), longer where N / G would pass MEM_CHUNK_RATE chunks a second
# (default 2,500; at 10,000 a second the server fell a second behind here): 4 s at 10,000 (4 s of
# arrivals, 4 tokens), 40 s at 100,000 (40 s, 4 tokens).
# On a bigger host MEM_RATE=20000 MEM_CHUNK_RATE=100000 keep the runs short. The ITL error is
# computed from every chunk's stamp in the saved requests (exact; the summary's percentiles are
# HDR-binned, ~80 µs at a 1 s gap).
# RSS of the client process (ru_maxrss) at N streams minus at the first level, per extra stream: the
# client's connection state, parser and the records' chunk arrays (the kernel's socket buffers are
# not in it). More than ~28,000 streams to one port need more source addresses:
# DSPERF_CLIENT_LOCAL_ADDRS spreads them over 127.0.0.1..N. "peak open" is the most streams open at
# once (from the per-request send and end times).
# A level needs N descriptors in the client and N in the server. The script raises the limits
# (fd_limit.sh; root with CAP_SYS_RESOURCE can lift the hard limit to fs.nr_open). Where the hard
# limit stays below a level, that level runs as P pairs of one client and one server process (each
# pair its own port, N/P streams each) side by side on this host: the memory is then the sum of the
# P clients' RSS (P process bases included; per stream: the sum less P x the first level's RSS, over
# N less P x the first level's streams), the ITL error p50 the median of the P clients' and p99 the
# largest, the server's lateness summed over the P servers. The row says "P procs".
if section mem; then
MEM_ITL=${MEM_ITL:-1s}
MEM_TOKENS=${MEM_TOKENS:-4}
MEM_LEVELS=${MEM_LEVELS:-1000 10000 100000}
MEM_RATE=${MEM_RATE:-2500}
MEM_CHUNK_RATE=${MEM_CHUNK_RATE:-2500}
itl0_us=$(python3 -c "import re;s='$MEM_ITL';m=re.match(r'([0-9.]+)(us|ms|s)',s);print(int(float(m[1])*{'us':1,'ms':1e3,'s':1e6}[m[2]]))")
echo "== memory per stream (serve --ttft 50ms --itl G = max($MEM_ITL, N / $MEM_CHUNK_RATE per s); N arriving evenly over S = max(G, N / $MEM_RATE per s), each streaming until $((MEM_TOKENS - 1)) gaps after the last arrival: every stream open at once)"
FDS=$(ulimit -n)
printf '%-8s %-7s %-6s %-9s %-10s %-9s %-10s %-12s %-24s %s\n' streams path gap procs completed "peak open" rss_MiB "KiB/stream" "ITL err p50/p99 (us)" "server emissions"
peak_open() {  # jsonl files: the most streams open at once
  python3 - "$@" 2>/dev/null <<'PY' || echo "?"
import json, sys
ev = []
for p in sys.argv[1:]:
    for l in open(p):
        r = json.loads(l)
        if r.get("send_ns") and r.get("end_ns"): ev += [(r["send_ns"], 1), (r["end_ns"], -1)]
ev.sort(); cur = best = 0
for _, d in ev: cur += d; best = max(best, cur)
print(best)
PY
}
for m in own curl; do
  base=""
  for n in $MEM_LEVELS; do
    [ $m = curl ] && [ $n -gt 10000 ] && continue   # libcurl's ~9 KiB a stream: not taken further
    env=""; [ $m = curl ] && env="DSPERF_CLIENT_PATH=curl"
    # client processes: one where the limit holds N streams (and the server N connections)
    procs=1; [ "$FDS" -le $((n + 1000)) ] && procs=$(( (n + FDS - 3001) / (FDS - 3000) ))
    per=$(( (n + procs - 1) / procs ))
    itl_us=$(( n * 1000000 / MEM_CHUNK_RATE )); [ $itl_us -lt $itl0_us ] && itl_us=$itl0_us
    span_us=$(( n * 1000000 / MEM_RATE )); [ $span_us -lt $itl_us ] && span_us=$itl_us
    toks=$(( (span_us + itl_us - 1) / itl_us + MEM_TOKENS - 1 ))
    addrs=$(( per / 20000 + 1 ))
    urls="" cpids=""
    for k in $(seq 1 $procs); do
      "$BIN" serve --port 0 --duration 15m --threads "$SERVE_THREADS" --ttft 50ms --itl "${itl_us}us" --prefill-per-token 0 \
          >"$OUT/serve-mem-$k.out" 2>"$OUT/serve-mem-$k.err" &
      SERVE_PIDS="$SERVE_PIDS $!"
      wait_serve_url "$OUT/serve-mem-$k.out" bench_client "$OUT/serve-mem-$k.err"
      urls="$urls $URL"
    done
    k=0
    for u in $urls; do
      k=$((k + 1)); this=$per; [ $k = $procs ] && this=$((n - per * (procs - 1)))
      env $env DSPERF_CLIENT_LOCAL_ADDRS=$addrs "$BIN" bench --url "$u" --rate "$(python3 -c "print($this * 1e6 / $span_us)")/s" --arrival constant --requests "$this" --client-threads 1 \
          --dataset random:in=8,out=$toks --timeout 10m --quiet --percentiles 50,99 --out "$OUT/mem-$m-$n-$k.json" \
          --save-requests "$OUT/mem-$m-$n-$k.jsonl" >/dev/null 2>"$OUT/mem-$m-$n-$k.err" &
      cpids="$cpids $!"
    done
    for p in $cpids; do wait "$p" || true; done
    late=$(lateness $urls)
    stop_all
    jsons=$(for k in $(seq 1 $procs); do echo "$OUT/mem-$m-$n-$k.json"; done)
    sum() { python3 -c "
import json,sys
v=[]
for p in sys.argv[1:]:
    try: d=json.load(open(p)); v.append($1)
    except Exception: v.append(None)
print('?' if None in v else sum(v))" $jsons 2>/dev/null || echo "?"; }
    rss=$(sum "d['client']['max_rss_kib']")
    done_n=$(sum "d['completed']")
    itl=$(python3 - $itl_us $OUT/mem-$m-$n-*.jsonl 2>/dev/null <<'PY' || echo "?"
import json, sys
g = float(sys.argv[1]) * 1e3
e = []
for p in sys.argv[2:]:
    for l in open(p):
        c = json.loads(l).get("chunk_ns") or []
        e += [(b - a - g) / 1e3 for a, b in zip(c, c[1:])]
e.sort()
q = lambda f: e[min(len(e) - 1, int(f * len(e)))]
print("%d/%d" % (round(q(0.5)), round(q(0.99))))
PY
)
    [ -z "$base" ] && base=$rss && bn=$n
    perk=$(python3 -c "print('%.2f' % (($rss - $procs * $base) / ($n - $procs * $bn))) if $n > $bn else print('(base)')" 2>/dev/null || echo "?")
    printf '%-8s %-7s %-6s %-9s %-10s %-9s %-10s %-12s %-24s %s\n' "$n" "$m" "$((itl_us / 1000))ms" "$procs" "$done_n" "$(peak_open $OUT/mem-$m-$n-*.jsonl)" \
      "$(python3 -c "print(round($rss/1024))" 2>/dev/null || echo ?)" "$perk" "$itl" "$late"
    rm -f "$OUT"/mem-$m-$n-*.jsonl
    [ $m = own ] && [ $n = 10000 ] && own10k=$perk && own10k_itl99=${itl#*/}
    [ $m = own ] && [ $n = 100000 ] && own100k="$perk KiB/stream, $(python3 -c "print(round($rss/1024))" 2>/dev/null || echo ?) MiB in all over $procs process(es), $done_n completed"
  done
  [ $m = own ] && [ "${CLIENT_BENCH_CURL_MEM:-1}" = 0 ] && break
done
echo "RESULT memory_per_stream own=${own10k:-?} KiB (first level -> 10,000 streams; goal <= 10 KB); at 100,000: ${own100k:-not run}; ITL err p99 at 10,000 streams ${own10k_itl99:-?} us (goal < 200 where the server keeps up)"
fi

# ---- 3. burst: 32, 256 and 1,024 requests due at one instant (scripts/bench_burst.sh) ----
# The ways of sending side by side: prepared ahead (the default), built and sent when due (the
# client before), dealt over client threads, the libcurl path, OLD_BIN, and the floor (raw
# loopback sends back to back on this host).
stop_all
if section burst; then
DSPERF_BIN="$BIN" BENCH_OUT="${BENCH_OUT:-out/bench}" OLD_BIN="$OLD_BIN" bash "$(dirname "$0")/bench_burst.sh" || echo "burst: bench_burst.sh failed"
fi
