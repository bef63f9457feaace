"""Reads tests/gpu/verify.sh output: dsperf's recorded series and `nvidia-smi dmon` text, prints
steady-state means under each load and the checks (PASS/FAIL). Usage: summarize.py OUTDIR"""
import json
import sys


def mean(xs):
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else None


def dsperf_window(path, lo, hi):
    d = json.load(open(path))
    g = d["telemetry"]["gpu"][0]
    s = g["series"]
    idx = [i for i, t in enumerate(s["t_s"]) if lo <= t <= hi]
    out = {k: mean([s[k][i] for i in idx]) for k in s if k != "t_s"}
    out["_sampler"] = d["telemetry"]["sampler"]
    out["_summary"] = d["summary"]
    return out


def dmon_window(path, lo, hi):
    cols, rows = None, []
    for line in open(path):
        if line.startswith("# gpu"):
            cols = line[1:].split()
        elif not line.startswith("#") and cols and line.split():
            rows.append(line.split())
    rows = rows[lo:hi]   # one row a second from the start of the recording
    out = {}
    for j, c in enumerate(cols):
        vals = []
        for r in rows:
            try:
                vals.append(float(r[j]))
            except (ValueError, IndexError):
                pass
        out[c] = mean(vals)
    return out


def fmt(v):
    return "-" if v is None else f"{v:.1f}"


def main():
    out = sys.argv[1]
    ok = True
    for mode in ("matmul", "copy"):
        d = dsperf_window(f"{out}/rec_{mode}.json", 2.0, 11.0)
        m = dmon_window(f"{out}/dmon_{mode}.txt", 2, 11)
        print(f"== {mode} (steady state, t = 2..11 s)")
        for k in ("util_gpu_pct", "util_mem_pct", "sm_util_pct", "sm_occupancy_pct", "tensor_util_pct",
                  "hmma_util_pct", "dram_bw_util_pct", "fp16_util_pct", "fp32_util_pct", "power_w", "power_avg_w",
                  "sm_clock_mhz", "mem_clock_mhz", "temp_c", "mem_used_mib", "gpm_pcie_tx_mb_s", "gpm_pcie_rx_mb_s",
                  "nvlink_tx_mb_s", "throttled"):
            print(f"  dsperf {k:18s} {fmt(d.get(k))}")
        print("  nvidia-smi dmon     " + "  ".join(f"{k}={fmt(v)}" for k, v in m.items() if k not in ("gpu",)))
        pairs = [("util_gpu_pct", "sm", 10, "abs"), ("util_mem_pct", "mem", 10, "abs"),
                 ("power_w", "pwr", 0.15, "rel"), ("sm_clock_mhz", "pclk", 0.05, "rel"),
                 ("mem_clock_mhz", "mclk", 0.05, "rel"), ("temp_c", "gtemp", 5, "abs")]
        for a, b, tol, kind in pairs:
            x, y = d.get(a), m.get(b)
            if x is None or y is None:
                print(f"  agree  {a} vs dmon {b}: n/a")
                continue
            good = abs(x - y) <= (tol if kind == "abs" else tol * max(abs(y), 1e-9))
            ok &= good
            print(f"  agree  {a} {fmt(x)} vs dmon {b} {fmt(y)}: {'PASS' if good else 'FAIL'}")
        if mode == "matmul":
            checks = [("tensor_util_pct > 50", (d.get("tensor_util_pct") or 0) > 50),
                      ("sm_util_pct > 80", (d.get("sm_util_pct") or 0) > 80),
                      ("dram_bw_util_pct < 40", d.get("dram_bw_util_pct") is not None and d["dram_bw_util_pct"] < 40)]
        else:
            checks = [("dram_bw_util_pct > 60", (d.get("dram_bw_util_pct") or 0) > 60),
                      ("tensor_util_pct < 5", d.get("tensor_util_pct") is not None and d["tensor_util_pct"] < 5)]
        for name, good in checks:
            ok &= good
            print(f"  check  {name}: {'PASS' if good else 'FAIL'}")
        sm = d["_summary"]
        e, pw, win = sm.get("energy_j"), sm.get("power_w_mean_total"), sm.get("window_s")
        if e is not None and pw is not None:
            good = abs(e - pw * win) <= 0.05 * pw * win   # counter (read every 5 s) + power at the edges
            ok &= good
            print(f"  check  energy {e:.0f} J vs mean power x window {pw * win:.0f} J: {'PASS' if good else 'FAIL'}")
        s = d["_sampler"]
        print(f"  sampler: {s['ticks']} ticks in {s['wall_s']:.1f}s, cpu {s['cpu_s']:.3f}s = {s['cpu_pct_of_core']:.2f}% of a core")
    print("RESULT", "PASS" if ok else "FAIL")


if __name__ == "__main__":
    main()
