"""GPU load for tests/gpu/verify.sh: a bf16 matrix product (tensor cores busy, DRAM mostly idle)
or a large device-to-device copy (DRAM bandwidth busy, no tensor work), for a fixed time."""
import sys
import time

import torch


def main():
    mode, seconds = sys.argv[1], float(sys.argv[2])   # optional argv[3]: file written once running
    dev = torch.device("cuda:0")
    if mode == "matmul":
        n = 8192
        a = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
        b = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
        step = lambda: torch.mm(a, b)
        work = 2 * n ** 3
    elif mode == "copy":
        nbytes = 4 << 30
        x = torch.empty(nbytes // 2, device=dev, dtype=torch.bfloat16)
        y = torch.empty_like(x)
        step = lambda: y.copy_(x)
        work = 2 * nbytes
    else:
        raise SystemExit("mode: matmul | copy")
    step()
    torch.cuda.synchronize()
    if len(sys.argv) > 3:   # tell the caller the load is running (CUDA init and warm-up are done)
        open(sys.argv[3], "w").write("ready\n")
    t0 = time.time()
    iters = 0
    while time.time() - t0 < seconds:
        for _ in range(10):
            step()
        torch.cuda.synchronize()
        iters += 10
    dt = time.time() - t0
    unit = "TFLOP/s" if mode == "matmul" else "TB/s (read+write)"
    print(f"load {mode}: {iters} iterations in {dt:.1f}s, {work * iters / dt / 1e12:.1f} {unit}", flush=True)


if __name__ == "__main__":
    main()
