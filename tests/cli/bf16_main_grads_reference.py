#!/usr/bin/env python3
"""An independent NumPy reference of Megatron's bf16 main gradients
(--bf16 --use-precision-aware-optimizer --main-grads-dtype bf16), checked
against kiln's KILN_TEST_DUMP_GRADIENTS dump (trainer/gradient_dump.h).

From each rank's per-micro-batch f32 parameter gradients it redoes, with its
own bf16 rounding (not kiln/half.h's), Megatron's rounding points
(docs/MIXED_PRECISION.md, "bf16 main gradients"):
  1. main_grad (bf16) += grad / num_microbatches, one rounding per micro-batch
     (the loss is divided by the micro-batch count before backward);
  2. main_grad *= 1/DP in bf16, then a bf16 sum over the DP ranks;
  3. grad norm in fp32/fp64 of the bf16 grads; clipping scales the bf16
     grads in place (f32 product, rounded to bf16);
  4. TE FusedAdam (adam_w_mode) widens the bf16 grad to f32 and updates the
     f32 main params and moments.
With --clip-in f32 (--grad-reduce-in-bf16 without the precision-aware
optimizer) steps 3 and 4 are Megatron's other optimizers': each bf16 main
grad is copied to f32 (`main_grad.float()`), clipping scales that copy in
f32 (no bf16 rounding), and torch's Adam reads it. The reference also runs
the other clipping mode and checks that kiln's parameters are farther from
it than the tolerance, so the test can tell the two apart.
It checks that kiln's reduced bf16 accumulators are bitwise the reference's
(after kiln's division by the micro-batch and rank count, a power of two),
and that the reference's own parameter trajectory, run from the first
iteration's parameters, stays within --tolerance of kiln's at every
iteration. It also checks that the test can tell: rounding once at the end
(fp32 accumulation) must give different accumulators.

usage: bf16_main_grads_reference.py DUMP_DIR --ranks N [--clip-grad X
       --weight-decay X --clip-in bf16|f32 ...]: the run's own values of kiln's flags. Train
       N+1 iterations to check N steps (step t is checked against the
       parameters kiln dumps before step t+1).
"""
import argparse
import os
import struct
import sys

import numpy as np


def bf16_round(x):
    """f32 -> bf16 bits (uint16), round to nearest, ties to even; NaN kept quiet."""
    bits = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    lsb = (bits >> 16) & 1
    rounded = ((bits + 0x7FFF + lsb) >> 16).astype(np.uint16)
    nan = np.isnan(np.asarray(x, dtype=np.float32))
    rounded[nan] = ((bits[nan] >> 16) | 0x40).astype(np.uint16)
    return rounded


def bf16_value(h):
    """bf16 bits -> f32, exact."""
    return (np.asarray(h, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def read_manifest(path):
    params = []
    with open(path) as f:
        for line in f:
            name, numel, wd = line.split()
            params.append((name, int(numel), wd == "1"))
    return params


def read_dump(path, params, grad_bytes):
    """{iteration: {'P': [...], 'G': [[...], ...], 'S': [...], 'L': lr}}"""
    data = open(path, "rb").read()
    at = 0
    out = {}
    while at < len(data):
        tag = chr(data[at])
        (it,) = struct.unpack_from("<q", data, at + 1)
        at += 9
        rec = out.setdefault(it, {"G": []})
        if tag == "L":
            (rec["L"],) = struct.unpack_from("<d", data, at)
            at += 8
            continue
        values = []
        for _, n, _ in params:
            if tag == "S":  # the accumulators' dtype: bf16 bits (2 bytes) or f32
                values.append(np.frombuffer(data, dtype=np.uint16 if grad_bytes == 2 else np.float32, count=n,
                                            offset=at).copy())
                at += grad_bytes * n
            else:
                values.append(np.frombuffer(data, dtype=np.float32, count=n, offset=at).copy())
                at += 4 * n
        if tag == "G":
            rec["G"].append(values)
        else:
            rec[tag] = values
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dump")
    ap.add_argument("--ranks", type=int, required=True)
    ap.add_argument("--clip-grad", type=float, default=1.0)
    ap.add_argument("--weight-decay", type=float, default=0.01)
    ap.add_argument("--beta1", type=float, default=0.9)
    ap.add_argument("--beta2", type=float, default=0.999)
    ap.add_argument("--eps", type=float, default=1e-8)
    ap.add_argument("--tolerance", type=float, default=1e-5)
    ap.add_argument("--clip-in", choices=["bf16", "f32"], default="bf16")
    a = ap.parse_args()
    params = read_manifest(os.path.join(a.dump, "params.txt"))
    ranks = [read_dump(os.path.join(a.dump, f"rank{r}.bin"), params, 2) for r in range(a.ranks)]
    iterations = sorted(ranks[0])
    D = a.ranks
    if D > 2:
        sys.exit("the reference models a bf16 sum of at most 2 ranks (more: the order is MPI's)")
    # The asked clipping mode's trajectory, and the other mode's.
    modes = [a.clip_in, "f32" if a.clip_in == "bf16" else "bf16"]
    start = [x.astype(np.float32) for x in ranks[0][iterations[0]]["P"]]
    p = {k: [x.copy() for x in start] for k in modes}
    m = {k: [np.zeros_like(x) for x in start] for k in modes}
    v = {k: [np.zeros_like(x) for x in start] for k in modes}
    worst = {k: 0.0 for k in modes}
    clipped = 0
    told_apart = False
    checked = 0
    for t in iterations:
        M = len(ranks[0][t]["G"])
        assert all(len(r[t]["G"]) == M for r in ranks)
        # Parameters before this step (after the reference's previous one):
        # kiln's against the reference's.
        if t > iterations[0]:
            for k in modes:
                for i, kp in enumerate(ranks[0][t]["P"]):
                    worst[k] = max(worst[k], float(np.max(np.abs(kp - p[k][i]))))
            checked += 1
        reduced = []
        for i, (name, n, wd) in enumerate(params):
            per_rank = []
            for r in ranks:
                acc = np.zeros(n, dtype=np.uint16)
                for mb in range(M):
                    g = (r[t]["G"][mb][i] / np.float32(M)).astype(np.float32)
                    acc = bf16_round(bf16_value(acc) + g)
                per_rank.append(bf16_round(bf16_value(acc) * np.float32(1.0 / D)))
            total = per_rank[0]
            for other in per_rank[1:]:
                total = bf16_round(bf16_value(total) + bf16_value(other))
            # kiln's accumulators hold the sum (no 1/(M D)): a power of two apart.
            kiln = bf16_round(bf16_value(ranks[0][t]["S"][i]) * np.float32(1.0 / (M * D)))
            if not np.array_equal(kiln, total):
                bad = int(np.sum(kiln != total))
                sys.exit(f"iteration {t}: {name}: {bad} of {n} reduced bf16 gradients differ from the reference")
            once = bf16_round(sum(r[t]["G"][mb][i].astype(np.float64) for r in ranks for mb in range(M)) / (M * D))
            told_apart |= not np.array_equal(once, total)
            reduced.append(total)
        norm = np.sqrt(sum(float(np.sum(bf16_value(g).astype(np.float64) ** 2)) for g in reduced))
        coeff = np.float32(1.0)
        if a.clip_grad > 0 and norm > a.clip_grad:
            coeff = np.float32(a.clip_grad / (norm + 1e-6))
            clipped += 1
        step = t  # the optimizer started at iteration 1
        lr = np.float32(ranks[0][t]["L"])
        c1 = np.float32(1.0 / (1.0 - a.beta1**step))
        c2 = np.float32(1.0 / (1.0 - a.beta2**step))
        b1, b2, eps = np.float32(a.beta1), np.float32(a.beta2), np.float32(a.eps)
        for k in modes:
            for i, (name, n, wd) in enumerate(params):
                if k == "bf16":  # scaled as stored, then FusedAdam's exact upcast
                    g = bf16_value(bf16_round(bf16_value(reduced[i]) * coeff))
                else:  # scaled as an f32 copy
                    g = (bf16_value(reduced[i]) * coeff).astype(np.float32)
                m[k][i] = b1 * m[k][i] + (np.float32(1) - b1) * g
                v[k][i] = b2 * v[k][i] + (np.float32(1) - b2) * g * g
                decay = np.float32(a.weight_decay if wd else 0.0)
                upd = (m[k][i] * c1) / (np.sqrt(v[k][i] * c2) + eps) + decay * p[k][i]
                p[k][i] = (p[k][i] - lr * upd).astype(np.float32)
    own, other = worst[modes[0]], worst[modes[1]]
    print(f"{checked} steps checked ({clipped} clipped): reduced bf16 gradients bitwise equal; largest parameter "
          f"difference {own:.3g} (clipping in {modes[1]} instead: {other:.3g})")
    if checked < 20:
        sys.exit(f"only {checked} steps to check; train 21 iterations")
    if not told_apart:
        sys.exit("fp32 accumulation gives the same bf16 gradients here: the check cannot tell them apart")
    if own > a.tolerance:
        sys.exit(f"parameters differ from the reference by {own:.3g} > {a.tolerance}")
    if other <= a.tolerance:
        sys.exit(f"clipping in {modes[1]} is also within {a.tolerance} ({other:.3g}): the check cannot tell them apart")


if __name__ == "__main__":
    main()
