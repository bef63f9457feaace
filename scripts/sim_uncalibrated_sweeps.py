#!/usr/bin/env python3
"""sim_uncalibrated_sweeps.py - every recorded llama.cpp GPU sweep's levels (c = 1-8) predicted with
no calibration at all: `dsperf sim --engine-profile llamacpp-b4747` with the sweep's GPU, -np,
weight type and dataset, against the measured median TPOT. Prints one line per level
(sweep, users, weight type, TPOT error in %) and a summary (median |error|, within 15 %, inside the
+-39 % uncalibrated interval). README-sim.md, "An uncalibrated llama.cpp host", has its numbers.

    python3 scripts/sim_uncalibrated_sweeps.py [DSPERF] [-- EXTRA SIM FLAGS...]
"""
import glob
import json
import math
import os
import re
import subprocess
import sys
import tempfile

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "real-gpu")
NOT_SWEEPS = {"medium_config", "gpu_context", "gpu_slots", "gpu_cpu_only", "gpu_partial_offload"}


def main():
    args = sys.argv[1:]
    extra = args[args.index("--") + 1:] if "--" in args else []
    args = args[:args.index("--")] if "--" in args else args
    dsperf = args[0] if args else "build/dsperf"
    errs, temps = [], []
    for path in sorted(glob.glob(os.path.join(FIXTURES, "*.json"))):
        name = os.path.basename(path)[:-5]
        if name in NOT_SWEEPS:
            continue
        doc = json.load(open(path))
        dep = doc.get("deployment") or {}
        seqs = (dep.get("max_num_seqs") or {}).get("value") or 32   # medium_sweep predates /props: -np 32
        dtype = (dep.get("weight_dtype") or {}).get("value") or "fp16"
        # the fixtures README: gpu_*, h200a_* and medium_sweep ran on H200s, the rest on H100s
        gpu = "h200" if name.startswith(("gpu_", "h200")) or name == "medium_sweep" else "h100"
        model = ["--model-config", os.path.join(FIXTURES, "medium_config.json")] if "medium" in name else ["--model", "deepseek-v2-lite"]
        if "tiny" in name:
            # the 30M preset is in no catalog: its shape is the GGUF header the sweep recorded
            arch = (dep.get("architecture") or {}).get("value")
            cfg = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
            json.dump(dict(arch, model_type="deepseek_v2", architectures=["DeepseekV2ForCausalLM"]), cfg)
            cfg.close()
            temps.append(cfg.name)
            model = ["--model-config", cfg.name]
        for level in doc["levels"]:
            r = level["results"]
            users = int(level["load"])
            if users > 8 or not r.get("median_tpot_ms"):
                continue
            cmd = [dsperf, "sim", "--engine-profile", "llamacpp-b4747", *model, "--gpu", gpu, "--weight-dtype", dtype,
                   "--max-num-seqs", str(seqs), "--concurrency", str(users), "--requests", str(max(4 * users, r["completed"])),
                   "--dataset", r["config"]["dataset"], *extra]
            out = subprocess.run(cmd, capture_output=True, text=True).stdout
            m = re.search(r"Median TPOT \(ms\):\s+([0-9.]+)", out)
            if not m:
                print(name, users, "did not run:", " ".join(cmd), file=sys.stderr)
                continue
            e = float(m.group(1)) / r["median_tpot_ms"] - 1
            errs.append(e)
            print(name, users, dtype, "%+.1f" % (e * 100))
    for t in temps:
        os.unlink(t)
    if not errs:
        return 1
    a = sorted(abs(e) for e in errs)
    inside = sum(1 for e in errs if abs(math.log1p(e)) <= math.log(1.39))
    print("levels %d: median |TPOT error| %.1f %%, within 15 %% %d, inside +-39 %% %d" %
          (len(a), 100 * a[(len(a) - 1) // 2], sum(1 for x in a if x <= 0.15), inside))
    return 0


if __name__ == "__main__":
    sys.exit(main())
