#!/bin/sh
# GPU verification of dsperf's NVML/GPM telemetry (needs an NVIDIA GPU, nvidia-smi and PyTorch).
# Under a bf16 matmul, tensor and SM utilisation must read high and DRAM bandwidth low; under a
# large device-to-device copy, DRAM bandwidth must read high; NVML quantities must agree with
# `nvidia-smi dmon` run side by side. Usage: tests/gpu/verify.sh [DSPERF_BIN] [OUTDIR]
set -u
BIN=${1:-./dsperf}
OUT=${2:-/tmp/dsperf-gpu-verify}
HERE=$(dirname "$0")
REC_S=${REC_S:-12}
mkdir -p "$OUT"
"$BIN" env > "$OUT/env.txt" 2>&1; cat "$OUT/env.txt"
DSPERF_NVML_DEBUG=1 "$BIN" gpu --count 3 --interval 200ms 2>&1 | tee "$OUT/idle.txt"
for mode in matmul copy; do
    rm -f "$OUT/ready_$mode"
    python3 "$HERE/load.py" "$mode" $((REC_S + 4)) "$OUT/ready_$mode" > "$OUT/load_$mode.txt" 2>&1 &
    LOAD=$!
    i=0; while [ ! -f "$OUT/ready_$mode" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
    sleep 1
    nvidia-smi dmon -s pucm -d 1 > "$OUT/dmon_$mode.txt" 2>&1 &
    DMON=$!
    nvidia-smi dmon --gpm-metrics 2,3,5,7,10 -d 1 > "$OUT/dmon_gpm_$mode.txt" 2>&1 &   # newer nvidia-smi only
    DMONG=$!
    "$BIN" gpu --record "$OUT/rec_$mode.json" --duration ${REC_S}s --interval 100ms --host-metrics --server-pid $LOAD
    kill $DMON $DMONG 2>/dev/null; wait $DMON $DMONG 2>/dev/null
    wait $LOAD; cat "$OUT/load_$mode.txt"
done
"$BIN" gpu --count 5 --interval 100ms | tee "$OUT/table_after.txt"
python3 "$HERE/summarize.py" "$OUT" | tee "$OUT/summary.txt"
