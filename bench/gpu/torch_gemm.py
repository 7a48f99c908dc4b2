#!/usr/bin/env python3
"""cuBLAS GEMM throughput through PyTorch at the shapes `bench_backend_gemm
--set=gpu` times kiln at: GPT-2 124M's linear layers at 8192 tokens, each as
forward (y = x W^T), dgrad (dx = dy W) and wgrad (dW = dy^T x), with the
operands stored as kiln stores them. Columns: fp32 with TF32 off (the anchor
for kiln's fp32 kernels), TF32, bf16 and fp16 (the anchors for kiln's
--bf16 and --fp16 GEMMs, gemm_coopmat.comp's for fp16). Each figure is the median of
CUDA-event-timed runs after a warm-up, on random data, rotating over several
operand sets so that repeated runs do not measure the cache.

    python3 bench/gpu/torch_gemm.py [--reps 50]
"""
import argparse

import torch


def cases():
    out = []
    for name, t, k, n in (("124M qkv T=8192 K=768 N=2304", 8192, 768, 2304),
                          ("124M attn-proj T=8192 K=768 N=768", 8192, 768, 768),
                          ("124M mlp-up T=8192 K=768 N=3072", 8192, 768, 3072),
                          ("124M mlp-down T=8192 K=3072 N=768", 8192, 3072, 768),
                          ("124M lm-head T=8192 K=768 N=50304", 8192, 768, 50304)):
        out.append((name, "fwd", t, n, k, False, True))
        out.append((name, "dgrad", t, k, n, False, False))
        out.append((name, "wgrad", n, k, t, True, False))
    return out


def time_gemm(m, n, k, ta, tb, dtype, tf32, reps):
    torch.backends.cuda.matmul.allow_tf32 = tf32
    sets = []
    for _ in range(3):
        a = torch.randn((k, m) if ta else (m, k), device="cuda", dtype=dtype)
        b = torch.randn((n, k) if tb else (k, n), device="cuda", dtype=dtype)
        sets.append((a, b))

    def run(i):
        a, b = sets[i % len(sets)]
        return (a.t() if ta else a) @ (b.t() if tb else b)

    for i in range(5):
        run(i)
    torch.cuda.synchronize()
    times = []
    for i in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        run(i)
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e) / 1e3)
    times.sort()
    return 2.0 * m * n * k / times[len(times) // 2] / 1e9


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--reps", type=int, default=50)
    a = p.parse_args()
    print("device:", torch.cuda.get_device_name(0), "| torch", torch.__version__)
    print()
    print("| shape | layout | m x n x k | fp32 GFLOP/s | tf32 GFLOP/s | bf16 GFLOP/s | fp16 GFLOP/s |")
    print("|---|---|---|---|---|---|---|")
    for name, layout, m, n, k, ta, tb in cases():
        fp32 = time_gemm(m, n, k, ta, tb, torch.float32, False, a.reps)
        tf32 = time_gemm(m, n, k, ta, tb, torch.float32, True, a.reps)
        bf16 = time_gemm(m, n, k, ta, tb, torch.bfloat16, False, a.reps)
        fp16 = time_gemm(m, n, k, ta, tb, torch.float16, False, a.reps)
        print("| %s | %s | %d x %d x %d | %.1f | %.1f | %.1f | %.1f |" % (name, layout, m, n, k, fp32, tf32, bf16, fp16),
              flush=True)
    torch.backends.cuda.matmul.allow_tf32 = False


if __name__ == "__main__":
    main()
