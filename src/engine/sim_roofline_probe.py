# sim_roofline_probe — measures achievable HBM bandwidth and dense bf16/fp8 matmul rate on the
# local GPU (torch), and matmul times for a weight of decode-like shape at growing batch, to check
# the simulator's roofline t = max(bytes / (BW x bw_eff), flops / (FLOPS x compute_eff)).
import json, sys, torch
dev = "cuda"
def timeit(fn, reps=20):
    for _ in range(3): fn()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(True), torch.cuda.Event(True)
    s.record()
    for _ in range(reps): fn()
    e.record(); torch.cuda.synchronize()
    return s.elapsed_time(e) / 1e3 / reps
out = {"gpu": torch.cuda.get_device_name()}
x = torch.empty(4 << 30, dtype=torch.uint8, device=dev); y = torch.empty_like(x)
t = timeit(lambda: y.copy_(x)); out["copy_GBps"] = 2 * x.numel() / t / 1e9
xb = torch.ones(2 << 30, dtype=torch.bfloat16, device=dev)
t = timeit(lambda: xb.sum()); out["read_GBps"] = xb.numel() * 2 / t / 1e9
del x, y, xb
n = 8192
a = torch.randn(n, n, dtype=torch.bfloat16, device=dev); b = torch.randn(n, n, dtype=torch.bfloat16, device=dev)
t = timeit(lambda: a @ b); out["bf16_TFLOPS"] = 2 * n**3 / t / 1e12
try:
    a8 = a.to(torch.float8_e4m3fn); b8 = b.to(torch.float8_e4m3fn).t().contiguous().t()
    one = torch.tensor(1.0, device=dev)
    t = timeit(lambda: torch._scaled_mm(a8, b8, scale_a=one, scale_b=one, out_dtype=torch.bfloat16))
    out["fp8_TFLOPS"] = 2 * n**3 / t / 1e12
except Exception as ex:
    out["fp8_error"] = str(ex)[:200]
# decode-like: activations [B, 7168] x weight [7168, 18432] (a V3 dense MLP up-projection)
k, m = 7168, 18432 * 2
w = torch.randn(k, m, dtype=torch.bfloat16, device=dev)
rows = []
for bsz in [1, 8, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192]:
    xa = torch.randn(bsz, k, dtype=torch.bfloat16, device=dev)
    t = timeit(lambda: xa @ w)
    byt = w.numel() * 2 + xa.numel() * 2 + bsz * m * 2
    rows.append({"batch": bsz, "ms": t * 1e3, "GBps": byt / t / 1e9, "TFLOPS": 2 * bsz * k * m / t / 1e12})
out["gemm_by_batch"] = rows
json.dump(out, sys.stdout, indent=1)
