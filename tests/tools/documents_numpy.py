#!/usr/bin/env python3
"""An independent NumPy reference of Megatron's document flags for packed
samples, checked against the losses kiln's KILN_TEST_DUMP_BATCHES dump
records (trainer/batch_dump.h). The masks are made as Megatron's
get_ltor_masks_and_position_ids makes them, from each sample's input tokens:
  for each EOD at index i, in order (prev starts at 0):
    --reset-attention-mask: attention_mask[(i + 1):, :(i + 1)] = 0 (on top of causal)
    --reset-position-ids:   position_ids[(i + 1):] -= i + 1 - prev; prev = i + 1
  --eod-mask-loss: loss_mask[tokens == eod] = 0
and the micro-batch's loss is sum(losses * loss_mask) / loss_mask.sum(), as
Megatron's loss_func. The model is the Hugging Face export of the checkpoint
the run saved (hf_llama_numpy.py or hf_gpt2_numpy.py by config.json's
model_type), in float64.

It also checks that the test can tell: a micro-batch holding an EOD inside
must give another loss without the flags.

usage: documents_numpy.py HF_DIR DUMP EOD [--reset-position-ids]
       [--reset-attention-mask] [--eod-mask-loss] [--tolerance 1e-6]
       (prints the largest relative difference; exit 1 past the tolerance)
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_gpt2_numpy  # noqa: E402
import hf_llama_numpy  # noqa: E402
from hf_numpy_common import load_dir  # noqa: E402


def masks(tokens, eod, reset_positions, reset_attention, eod_mask_loss):
    T = len(tokens)
    visible = np.tril(np.ones((T, T), dtype=bool))
    positions = np.arange(T)
    prev = 0
    for i in np.flatnonzero(np.asarray(tokens) == eod):
        if reset_attention:
            visible[i + 1:, :i + 1] = False
        if reset_positions:
            positions[i + 1:] -= i + 1 - prev
            prev = i + 1
    loss_mask = np.ones(T)
    if eod_mask_loss:
        loss_mask[np.asarray(tokens) == eod] = 0.0
    return positions, visible, loss_mask


def micro_batch_loss(forward, config, tensors, tokens, targets, T, eod, flags):
    losses, weights = [], []
    for b in range(len(tokens) // T):
        ids, tg = tokens[b * T:(b + 1) * T], targets[b * T:(b + 1) * T]
        positions, visible, loss_mask = masks(ids, eod, *flags)
        logits = forward(config, tensors, ids, positions, visible)
        top = logits.max(-1, keepdims=True)
        lse = (top + np.log(np.exp(logits - top).sum(-1, keepdims=True)))[:, 0]
        losses.append(lse - logits[np.arange(T), tg])
        weights.append(loss_mask)
    losses, weights = np.concatenate(losses), np.concatenate(weights)
    return float((losses * weights).sum() / weights.sum())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("hf_dir")
    ap.add_argument("dump")
    ap.add_argument("eod", type=int)
    ap.add_argument("--seq-length", type=int, required=True)
    ap.add_argument("--reset-position-ids", action="store_true")
    ap.add_argument("--reset-attention-mask", action="store_true")
    ap.add_argument("--eod-mask-loss", action="store_true")
    ap.add_argument("--tolerance", type=float, default=1e-6)
    a = ap.parse_args()
    config, tensors = load_dir(a.hf_dir)
    forward = {"llama": hf_llama_numpy.forward, "gpt2": hf_gpt2_numpy.forward}[config["model_type"]]
    flags = (a.reset_position_ids, a.reset_attention_mask, a.eod_mask_loss)
    worst, told, lines = 0.0, False, 0
    with open(a.dump) as f:
        for line in f:
            head, targets, loss = line.split("|")
            words = [int(w) for w in head.split()]
            iteration, tokens = words[0], words[2:]
            targets = [int(w) for w in targets.split()]
            if iteration != 1:  # the exported checkpoint holds the parameters iteration 1 used
                continue
            lines += 1
            want = micro_batch_loss(forward, config, tensors, tokens, targets, a.seq_length, a.eod, flags)
            got = float(loss)
            worst = max(worst, abs(got - want) / abs(want))
            if any(flags) and a.eod in tokens[:-1]:
                plain = micro_batch_loss(forward, config, tensors, tokens, targets, a.seq_length, a.eod,
                                         (False, False, False))
                told = told or abs(plain - want) / abs(want) > 100 * a.tolerance
    if lines == 0:
        sys.exit(f"{a.dump}: no micro-batch of iteration 1")
    print(f"{lines} micro-batches: largest relative difference {worst:.3g} (tolerance {a.tolerance:g})")
    if any(flags) and not told:
        sys.exit("no micro-batch tells the flags apart: the data holds no EOD inside a sample")
    if worst > a.tolerance:
        sys.exit(1)


if __name__ == "__main__":
    main()
