#!/bin/sh
# gpu_scenarios.sh — the scenario corpus on an NVIDIA GPU. Builds llama.cpp's llama-server (the
# source in ../shared/engines) for CUDA, writes random-weight DeepSeek-V2 GGUFs with DeepSeek's real
# tokenizer (the V2-Lite shape, 15.7B, and the 906M `medium` preset), then runs each scenario: a
# llama-server configuration whose limiting factor is known by construction, and a `dsperf sweep`
# against it with full telemetry (NVML/GPM of every GPU, the server's /metrics, host and server CPU).
# Each scenario leaves OUT/gpu_NAME.json (the sweep file), OUT/gpu_NAME.txt (what dsperf printed) and
# OUT/gpu_NAME.server.log (the server's log tail). tests/fixtures/real-gpu/README.md says how each
# recorded fixture was made with this script and why its cause is what it is.
#
#   sh scripts/gpu_scenarios.sh --shared DIR --work DIR --out DIR --dsperf BIN [SCENARIO...]
#
# DIR of --shared holds engines/, tools/ and testdata/ (as ../shared does); --work is scratch space
# (the build and ~33 GB of models); BIN is a dsperf binary that runs there (LD_LIBRARY_PATH may be set
# for it alone with --dsperf-libs DIR). Scenarios: slots overhead cpu_only partial_offload context
# (default: all, in that order); overhead_q8, overhead_q4 and overhead_long (the simulator's held-out
# sweeps, run when named; the quantized ones also build llama-quantize), floor_f16, floor_q8 and floor_q4
# (the loop kernels' GPU time per weight type, run when named), overhead_long_q8, medium_f16,
# medium_q8, medium_q4 and long_q4 (further hold-outs: Q8_0 and Q4_0 with long requests, the 906M preset
# in three weight types; run when named); repeat (three repeats of each level, run when named); restart_a..c and pinned_a..b (one server started anew, its threads watched; run when named); long_levels, long_levels_medium and long_levels_tiny (20-40 s levels, c = 1..16; run when named); and on a machine with two or more GPUs the four split runs (`multigpu`
# names them all): layer_split (-sm layer, c = 1..32), row_split (-sm row, same load), uneven_split
# (-sm layer -ts 3,1), two_servers (one llama-server per GPU, -sm none, two URLs benched as one job:
# two ranks under mpirun, one per server). Asked for on fewer than two GPUs, they are refused (exit 2)
# before anything is built. Needs nvcc, cmake, python3 with numpy, 40 GB of disk (mpirun for two_servers).
set -eu
SHARED=../shared WORK=/tmp/dsperf-gpu OUT=out/gpu DSPERF=./dsperf LIBS=""
while [ $# -gt 0 ]; do
  case "$1" in
    --shared) SHARED=$2; shift 2 ;;
    --work) WORK=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --dsperf) DSPERF=$2; shift 2 ;;
    --dsperf-libs) LIBS=$2; shift 2 ;;
    -*) echo "gpu_scenarios: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
SCENARIOS=${*:-slots overhead cpu_only partial_offload context}
SPLIT="layer_split row_split uneven_split two_servers"
SCENARIOS=$(echo " $SCENARIOS " | sed "s/ multigpu / $SPLIT /g")
# the split runs need two GPUs: say so before building anything (nvidia-smi -L: one line per GPU)
need_two=0
for s in $SCENARIOS; do case " $SPLIT " in *" $s "*) need_two=1 ;; esac; done
if [ $need_two = 1 ]; then
  ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
  if [ "${ngpu:-0}" -lt 2 ]; then
    echo "gpu_scenarios: the split scenarios ($SPLIT) need 2 GPUs; this machine has ${ngpu:-0} (nvidia-smi -L): run them on a 2-GPU machine or leave them out" >&2
    exit 2
  fi
  case " $SCENARIOS " in *" two_servers "*) command -v mpirun >/dev/null 2>&1 || {
    echo "gpu_scenarios: two_servers runs two ranks under mpirun, which is not installed (apt-get install openmpi-bin)" >&2; exit 2; } ;; esac
fi
mkdir -p "$WORK" "$OUT"
WORK=$(cd "$WORK" && pwd); OUT=$(cd "$OUT" && pwd)
VOCAB="$SHARED/testdata/tokenizers/deepseek-llm/ggml-vocab-deepseek-llm.gguf"
JOBS=$(nproc)
log() { echo "[$(date +%H:%M:%S)] $*" | tee -a "$OUT/progress.txt" >&2; }
ds() { if [ -n "$LIBS" ]; then LD_LIBRARY_PATH="$LIBS" "$DSPERF" "$@"; else "$DSPERF" "$@"; fi; }

# 1. llama-server for CUDA (Hopper: sm_90), outside any git work tree
SRV="$WORK/llama-server"
if [ ! -x "$SRV" ]; then
  log "building llama-server for CUDA (-j$JOBS)"
  rm -rf "$WORK/src" && mkdir -p "$WORK/src"
  tar xzf "$SHARED/engines/llama.cpp-c392e50-src.tar.gz" -C "$WORK/src"
  (cd "$WORK/src" && GIT_CEILING_DIRECTORIES="$WORK" cmake -S . -B build -DGGML_NATIVE=OFF -DLLAMA_CURL=OFF \
      -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_TESTS=OFF \
      -DCMAKE_BUILD_TYPE=Release >"$OUT/build.log" 2>&1 && cmake --build build -j"$JOBS" --target llama-server >>"$OUT/build.log" 2>&1) \
    || { log "the CUDA build failed (build.log)"; tail -n 30 "$OUT/build.log" >&2; exit 1; }
  cp "$WORK/src/build/bin/llama-server" "$SRV"
  log "built"
fi
QUANT="$WORK/llama-quantize"   # llama.cpp's own quantizer, for the quantized-weight runs
need_quant=0
for s in $SCENARIOS; do case $s in overhead_q8 | overhead_q4 | floor_q8 | floor_q4 | overhead_long_q8 | medium_q8 | medium_q4 | long_q4) need_quant=1 ;; esac; done
if [ $need_quant = 1 ] && [ ! -x "$QUANT" ]; then
  log "building llama-quantize"
  (cd "$WORK/src" && cmake --build build -j"$JOBS" --target llama-quantize >>"$OUT/build.log" 2>&1) \
    || { log "the llama-quantize build failed (build.log)"; tail -n 30 "$OUT/build.log" >&2; exit 1; }
  cp "$WORK/src/build/bin/llama-quantize" "$QUANT"
fi

# 2. the models (same seed and shape give the same bytes)
gguf() {   # gguf NAME ARGS...
  f="$WORK/$1.gguf"; shift
  [ -s "$f" ] && return 0
  log "writing $f"
  python3 "$SHARED/tools/make_random_deepseek_gguf.py" --gguf-py "$WORK/src/gguf-py" --vocab "$VOCAB" "$@" "$f.tmp" >"$f.log" 2>&1 \
    || { log "writing $f failed"; tail -n 10 "$f.log" >&2; exit 1; }
  mv "$f.tmp" "$f"
}
need_v2lite=0; need_medium=0; need_tiny=0
for s in $SCENARIOS; do case $s in cpu_only | medium_* | *_medium) need_medium=1 ;; *_tiny) need_tiny=1 ;; *) need_v2lite=1 ;; esac; done
[ $need_medium = 1 ] && gguf medium --size medium
[ $need_tiny = 1 ] && gguf tiny --size tiny
[ $need_v2lite = 1 ] && gguf v2lite --size v2lite --tile 1048573
quantize() {   # quantize SCENARIO BASE TYPE: BASE.gguf -> BASE-<type>.gguf with llama.cpp's own quantizer
  q=$(echo "$3" | tr 'A-Z' 'a-z')
  case " $SCENARIOS " in *" $1 "*) ;; *) return 0 ;; esac
  [ -s "$WORK/$2-$q.gguf" ] && return 0
  log "quantizing $2 to $3"
  "$QUANT" "$WORK/$2.gguf" "$WORK/$2-$q.gguf.tmp" "$3" >"$WORK/quantize-$2-$q.log" 2>&1 \
    || { log "quantizing $2 to $3 failed"; tail -n 10 "$WORK/quantize-$2-$q.log" >&2; exit 1; }
  mv "$WORK/$2-$q.gguf.tmp" "$WORK/$2-$q.gguf"
}
quantize overhead_q8 v2lite Q8_0
quantize overhead_q4 v2lite Q4_0
quantize floor_q8 v2lite Q8_0
quantize floor_q4 v2lite Q4_0
quantize overhead_long_q8 v2lite Q8_0
quantize medium_q8 medium Q8_0
quantize medium_q4 medium Q4_0
quantize long_q4 v2lite Q4_0

# 3. the scenarios
PORT=18080 WATCH=0 PIN_CORE=""
start_server() {   # start_server MODEL FLAGS...: sets SPID; waits for /health 200 (port $SPORT, default $PORT;
  model=$1; shift  # with $SDEV set, the server sees only that GPU: CUDA_VISIBLE_DEVICES=$SDEV)
  port=${SPORT:-$PORT}
  setsid env ${SDEV:+CUDA_VISIBLE_DEVICES=$SDEV} "$SRV" -m "$WORK/$model.gguf" --host 127.0.0.1 --port "$port" --metrics --slots "$@" >"$WORK/server.$port.log" 2>&1 &
  SPID=$!
  i=0
  until curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1; do
    i=$((i + 1)); sleep 1
    if ! kill -0 $SPID 2>/dev/null || [ $i -gt 300 ]; then log "the server did not start"; tail -n 20 "$WORK/server.$port.log" >&2; return 1; fi
  done
  cp "$WORK/server.$port.log" "$WORK/server.log" 2>/dev/null || true
}
stop_pid() {
  kill "$1" 2>/dev/null || true
  i=0; while kill -0 "$1" 2>/dev/null && [ $i -lt 20 ]; do sleep 0.5; i=$((i + 1)); done
  kill -9 "$1" 2>/dev/null || true
}
stop_server() { stop_pid $SPID; tail -n 60 "$WORK/server.$PORT.log" >"$WORK/server.log" 2>/dev/null || true; }
# run NAME MODEL "SERVER FLAGS" SWEEP ARGS... With WATCH=1, the server's threads are watched: every
# 2 s, which core each of llama-server's threads is on and its CPU share (ps -L), into
# OUT/gpu_NAME.threads.txt (and the host's lscpu and GPU topology once, OUT/host.txt); with PIN_CORE
# set too, the main thread alone (the one that launches the kernels; its tid is the pid) is pinned to
# that core first (taskset -p, no -a)
run() {
  name=$1 model=$2 flags=$3; shift 3
  log "scenario $name: llama-server $flags${PIN_CORE:+, main thread on core $PIN_CORE}"
  # shellcheck disable=SC2086
  start_server "$model" $flags || return 0
  WPID=""
  if [ "$WATCH" = 1 ]; then
    [ -s "$OUT/host.txt" ] || { lscpu; nvidia-smi topo -m; } >"$OUT/host.txt" 2>&1
    [ -n "$PIN_CORE" ] && taskset -pc "$PIN_CORE" $SPID >>"$OUT/gpu_$name.threads.txt" 2>&1
    ( while kill -0 $SPID 2>/dev/null; do echo "--- $(date +%s.%N)"; ps -L -o tid=,psr=,pcpu=,comm= -p $SPID; sleep 2; done ) >>"$OUT/gpu_$name.threads.txt" 2>&1 &
    WPID=$!
  fi
  ds sweep --url "http://127.0.0.1:$PORT" --tokenizer "$VOCAB" --gpu-ids all --server-metrics "http://127.0.0.1:$PORT/metrics" \
     --host-metrics --server-pid $SPID --warmup 2 --no-progress --out "$OUT/gpu_$name.json" "$@" >"$OUT/gpu_$name.txt" 2>&1 || true
  ds diagnose "$OUT/gpu_$name.json" >>"$OUT/gpu_$name.txt" 2>&1 || true
  stop_server
  [ -n "$WPID" ] && stop_pid $WPID
  tail -n 60 "$WORK/server.log" >"$OUT/gpu_$name.server.log"
  log "scenario $name done"
}
# Two independent servers, one per GPU (each sees only its own: CUDA_VISIBLE_DEVICES; -sm none says
# so on its command line), benched as one job: rank 0 against the first URL, rank 1 against the
# second, under mpirun on this host. Rank 0 samples every GPU (NVML sees both whatever CUDA sees),
# so the job's result holds both GPUs' series on rank 0's clock beside the merged requests.
two_servers() {   # two_servers MODEL "SERVER FLAGS" SWEEP ARGS...
  model=$1 flags=$2; shift 2
  log "scenario two_servers: llama-server $flags on each GPU"
  SDEV=0 SPORT=$PORT
  # shellcheck disable=SC2086
  start_server "$model" $flags -sm none || { SDEV="" SPORT=""; return 0; }
  P0=$SPID
  SDEV=1 SPORT=$((PORT + 1))
  # shellcheck disable=SC2086
  start_server "$model" $flags -sm none || { SDEV="" SPORT=""; stop_pid $P0; return 0; }
  P1=$SPID SDEV="" SPORT=""
  ROOT=""; [ "$(id -u)" = 0 ] && ROOT="--allow-run-as-root"
  common="--tokenizer $VOCAB --gpu-ids all --host-metrics --warmup 2 --no-progress --out $OUT/gpu_two_servers.json"
  # shellcheck disable=SC2086
  if [ -n "$LIBS" ]; then envx="-x LD_LIBRARY_PATH=$LIBS"; else envx=""; fi
  # shellcheck disable=SC2086
  mpirun $ROOT --oversubscribe --bind-to none $envx \
      -np 1 "$DSPERF" sweep --url "http://127.0.0.1:$PORT" --server-metrics "http://127.0.0.1:$PORT/metrics" --server-pid $P0 $common "$@" : \
      -np 1 "$DSPERF" sweep --url "http://127.0.0.1:$((PORT + 1))" $common "$@" >"$OUT/gpu_two_servers.txt" 2>&1 || true
  ds diagnose "$OUT/gpu_two_servers.json" >>"$OUT/gpu_two_servers.txt" 2>&1 || true
  stop_pid $P0; stop_pid $P1
  { tail -n 30 "$WORK/server.$PORT.log"; tail -n 30 "$WORK/server.$((PORT + 1)).log"; } >"$OUT/gpu_two_servers.server.log" 2>/dev/null
  log "scenario two_servers done"
}
for s in $SCENARIOS; do
  case $s in
    # 4 slots under up to 16 users: admission is capped at -np 4 (llama.cpp has no waiting gauge)
    slots) run slots v2lite "-ngl 99 -np 4 -c 16384" --concurrency 2,4,8,16 --duration 12s --dataset random:in=512,out=128 ;;
    # 32 slots, 1..32 users, short prompts: llama.cpp's fixed per-step cost, not HBM, sets the step
    overhead) run overhead v2lite "-ngl 99 -np 32 -c 65536" --concurrency 1..32x2 --duration 10s --dataset random:in=256,out=128 ;;
    # held-out runs for the simulator's calibrate-then-predict (issue 30): the overhead construction
    # with Q8_0 weights (half the bytes, the same expert loop), and with 4x longer prompts and 2x
    # longer answers (more attention and KV per token); neither is fitted, each is predicted from its
    # own lowest level
    overhead_q8) run overhead_q8 v2lite-q8_0 "-ngl 99 -np 32 -c 65536" --concurrency 1..32x2 --duration 10s --dataset random:in=256,out=128 ;;
    # the same with Q4_0 (4.5 bits a weight: the same MMVQ/MMQ loop, a quarter of f16's bytes)
    overhead_q4) run overhead_q4 v2lite-q4_0 "-ngl 99 -np 32 -c 65536" --concurrency 1..32x2 --duration 10s --dataset random:in=256,out=128 ;;
    # the GPU time of the expert loop's small kernels per weight type (cost_model.c ggml_kernel_gpu_s):
    # short prompts (128 in / 128 out) at c = 1..8, the same V2-Lite in f16, Q8_0 and Q4_0 on one host;
    # NVML's busy share x the median ITL grows with the loop's kernels from c = 1 (none) up
    floor_f16) run floor_f16 v2lite "-ngl 99 -np 8 -c 16384" --concurrency 1..8x2 --duration 12s --dataset random:in=128,out=128 ;;
    floor_q8) run floor_q8 v2lite-q8_0 "-ngl 99 -np 8 -c 16384" --concurrency 1..8x2 --duration 12s --dataset random:in=128,out=128 ;;
    floor_q4) run floor_q4 v2lite-q4_0 "-ngl 99 -np 8 -c 16384" --concurrency 1..8x2 --duration 12s --dataset random:in=128,out=128 ;;
    overhead_long) run overhead_long v2lite "-ngl 99 -np 32 -c 65536" --concurrency 1..32x2 --duration 15s --dataset random:in=1024,out=256 ;;
    # hold-outs of calibrate-then-predict in constructions the simulator has not met: Q8_0 with long
    # requests, and the 906M preset (32 experts top 6) in f16, Q8_0 and Q4_0 with the server's own timings;
    # long_q4: Q4_0 with long requests
    overhead_long_q8) run overhead_long_q8 v2lite-q8_0 "-ngl 99 -np 32 -c 65536" --concurrency 1..32x2 --duration 15s --dataset random:in=1024,out=256 ;;
    medium_f16) run medium_f16 medium "-ngl 99 -np 32 -c 65536" --concurrency 1..32x2 --duration 10s --dataset random:in=256,out=128 ;;
    medium_q8) run medium_q8 medium-q8_0 "-ngl 99 -np 32 -c 65536" --concurrency 1..32x2 --duration 10s --dataset random:in=256,out=128 ;;
    medium_q4) run medium_q4 medium-q4_0 "-ngl 99 -np 32 -c 65536" --concurrency 1..32x2 --duration 10s --dataset random:in=256,out=128 ;;
    long_q4) run long_q4 v2lite-q4_0 "-ngl 99 -np 32 -c 65536" --concurrency 1..32x2 --duration 15s --dataset random:in=1024,out=256 ;;
    # repeatability: the overhead construction at 1-8 users, three repeats of every level (fresh
    # prompts each), each level long enough for two or more waves of its closed loop: how far two runs of
    # one level on one host differ, against the simulator's error at 2-8x (issue 30)
    # process to process: the same server started anew on one host, c = 1, 4, 8; restart_* as started,
    # pinned_* with the kernel-launching main thread pinned to one core: does the host's share of a
    # step at c >= 2 move between server processes while c = 1 stays (issue 30), and is it placement?
    # (PIN=N in the environment picks the core; 2 by default)
    restart_a | restart_b | restart_c) WATCH=1; run "$s" v2lite "-ngl 99 -np 32 -c 65536" --concurrency 1,4,8 --duration 12s --dataset random:in=256,out=128; WATCH=0 ;;
    pinned_a | pinned_b) WATCH=1 PIN_CORE=${PIN:-2}; run "$s" v2lite "-ngl 99 -np 32 -c 65536" --concurrency 1,4,8 --duration 12s --dataset random:in=256,out=128; WATCH=0 PIN_CORE="" ;;
    # long levels: 30-40 s each, so c = 1 holds 20 or more requests (its prompt median and mean ITL
    # from many, not 4-6) and every level several waves: does a longer calibration level steady the
    # prediction at 2-8x, and does calibrating on c = 2 or 4 predict what c = 1 cannot (issue 30)
    long_levels) run long_levels v2lite "-ngl 99 -np 32 -c 65536" --concurrency 1..16x2 --duration 40s --dataset random:in=256,out=128 ;;
    long_levels_medium) run long_levels_medium medium "-ngl 99 -np 32 -c 65536" --concurrency 1..16x2 --duration 30s --dataset random:in=256,out=128 ;;
    # the 30M `tiny` preset (4 layers, 16 experts): a step of a few hundred microseconds of GPU work,
    # so the host's loop, sampling over the 102400-token vocabulary and HTTP set the pace
    long_levels_tiny) run long_levels_tiny tiny "-ngl 99 -np 32 -c 65536" --concurrency 1..16x2 --duration 20s --dataset random:in=256,out=128 ;;
    repeat) run repeat v2lite "-ngl 99 -np 32 -c 65536" --concurrency 1..8x2 --repeats 3 --duration 20s --dataset random:in=256,out=128 ;;
    # a GPU box serving with -ngl 0: the weights stay in host memory, the CPU does the work, the GPU idles
    cpu_only) run cpu_only medium "-ngl 0 -np 4 -c 8192" --concurrency 1,4 --duration 15s --dataset random:in=256,out=64 ;;
    # 8 of V2-Lite's 27 layers on the GPU: the 19 on the CPU set the step
    # (a request takes seconds here: levels are counted in requests, not time)
    partial_offload) run partial_offload v2lite "-ngl 8 -np 8 -c 16384" --concurrency 1,4 --requests 8 --dataset random:in=256,out=32 ;;
    # one load, prompts 1k..16k tokens: prefill grows with context (a context ladder, not a load ladder)
    context) run context v2lite "-ngl 99 -np 2 -c 69632" --input-len 1k..16k x2 --output-len 64 --concurrency 2 --requests 8 ;;
    # over two GPUs (llama.cpp's default layer split, said on the command line): the GPUs take turns,
    # each token's layers run on GPU 0 then GPU 1, so together they work one GPU's worth
    layer_split) run layer_split v2lite "-ngl 99 -sm layer -np 32 -c 65536" --concurrency 1..32x2 --duration 10s --dataset random:in=256,out=128 ;;
    # every layer split by rows over both GPUs: both busy at once, partial results exchanged each layer
    row_split) run row_split v2lite "-ngl 99 -sm row -np 32 -c 65536" --concurrency 1..32x2 --duration 10s --dataset random:in=256,out=128 ;;
    # three quarters of the layers on GPU 0: it is busy about three times as long as GPU 1 (the straggler)
    uneven_split) run uneven_split v2lite "-ngl 99 -sm layer -ts 3,1 -np 32 -c 65536" --concurrency 1..32x2 --duration 10s --dataset random:in=256,out=128 ;;
    # a server per GPU behind two URLs, one job of two ranks (each rank's concurrency is its half of the level)
    two_servers) two_servers v2lite "-ngl 99 -np 16 -c 32768" --concurrency 2..32x2 --duration 10s --dataset random:in=256,out=128 ;;
    *) log "unknown scenario $s" ;;
  esac
done
log "all done"
