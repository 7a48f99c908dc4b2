#!/usr/bin/env python3
"""One GPT-2 124M step's GEMM time, from kiln's table (bench_backend_gemm
--set=gpu, one GFLOP/s column per variant) and cuBLAS's (torch_gemm.py), as
issue 33 judges a GEMM: "at least 50% of cuBLAS by time" over the step's
shapes. Each shape's time is 2 m n k / its GFLOP/s, weighted as one step
uses it: the qkv, attention-projection and MLP shapes once per layer (12),
the LM head once; forward, dgrad and wgrad each. A shape missing from
kiln's table (a variant that failed its check stops the table) is named and
the sum left out.

    python3 bench/gpu/gemm_by_time.py KILN_TABLE.md TORCH_TABLE.md [--dtype bf16]
"""
import argparse
import sys

LAYERS = 12


def rows(path):
    """(header cells, {(shape, layout): (flops, [cells after m x n x k])})."""
    header, out = None, {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.startswith("|") or line.startswith("|---"):
                continue
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if cells[0] == "shape":
                header = cells[3:]
                continue
            m, n, k = (int(v) for v in cells[2].split(" x "))
            out[(cells[0], cells[1])] = (2.0 * m * n * k, cells[3:])
    return header, out


def weight(shape):
    return 1 if "lm-head" in shape else LAYERS


def step_ms(table, column):
    """Milliseconds of one step's GEMMs at the GFLOP/s of `column`."""
    return sum(weight(shape) * flops / (float(cells[column]) * 1e9) * 1e3
               for (shape, _), (flops, cells) in table.items())


def main():
    p = argparse.ArgumentParser()
    p.add_argument("kiln")
    p.add_argument("torch")
    p.add_argument("--dtype", default="bf16", help="cuBLAS's column to compare with: fp32, tf32, bf16 or fp16")
    a = p.parse_args()
    try:
        kiln_head, kiln = rows(a.kiln)
        torch_head, torch = rows(a.torch)
    except (OSError, ValueError) as e:
        print(f"- GEMM time per step: no sum ({e})")
        return 1
    if not kiln_head or not torch_head:
        print("- GEMM time per step: no sum (a table has no header: its run failed or was skipped)")
        return 1
    want = f"{a.dtype} GFLOP/s"
    if want not in torch_head:
        print(f"- GEMM time per step: cuBLAS's table has no '{want}' column")
        return 1
    missing = sorted(set(torch) - set(kiln))
    if missing:
        print("- GEMM time per step: no sum, kiln's table lacks " + ", ".join(f"{s} {l}" for s, l in missing))
        return 1
    reference = step_ms({key: torch[key] for key in kiln}, torch_head.index(want))
    print(f"- cuBLAS {a.dtype}: {reference:.1f} ms of GEMMs per 124M step (12 layers and the LM head, "
          "forward, dgrad and wgrad)")
    for i, name in enumerate(kiln_head):
        ms = step_ms(kiln, i)
        print(f"- kiln {name}: {ms:.1f} ms, {100 * reference / ms:.0f}% of cuBLAS {a.dtype} by time")
    return 0


if __name__ == "__main__":
    sys.exit(main())
