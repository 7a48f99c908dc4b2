#!/usr/bin/env python3
"""An independent MPT forward pass in NumPy, written from Hugging Face's
documented MptForCausalLM semantics (transformers' modeling_mpt.py), to
check what `kiln export --format hf` writes without Transformers:

  h = wte[ids]
  per block:  a = norm_1(h)                 (LayerNorm without bias: (x - mean) / sqrt(var + eps) * w)
              qkv = Wqkv(a)                 (nn.Linear without bias: x @ W^T)
              qkv = clamp(qkv, -clip_qkv, clip_qkv) if attn_config.clip_qkv
              q, k, v = qkv split in three blocks of d_model (chunk(3)), each heads x head_dim
              scores = q k^T * softmax_scale (1 / sqrt(head_dim) when null) + alibi, causal
              h += out_proj(softmax(scores) v)
              m = norm_2(h); h += down_proj(gelu(up_proj(m)))   (exact GELU: 0.5 x (1 + erf(x / sqrt 2)))
  logits = norm_f(h) @ wte^T      (lm_head is tied to wte)

ALiBi as build_mpt_alibi_tensor builds it, with alibi_bias_max 8 (MptModel
does not pass the config's): slopes 1 / 2^(i * 8 / n) for i = 1..n, n the
heads rounded up to a power of two, reordered (odd then even positions) when
n exceeds the heads; head h's bias for key j is slope * (j - (max_seq_len - 1)),
the same for every query (softmax is shift invariant along a row).
Everything runs in float64; erf is Python's math.erf. Commands as in
hf_numpy_common.py.
"""
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_numpy_common import main  # noqa: E402

erf = np.vectorize(math.erf)


def layer_norm(x, w, eps):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * w


def gelu(x):
    return 0.5 * x * (1.0 + erf(x / math.sqrt(2.0)))


def alibi_slopes(heads, bias_max=8.0):
    n = 2 ** math.ceil(math.log2(heads))
    slopes = 1.0 / np.power(2.0, np.arange(1, n + 1, dtype=np.float64) * (bias_max / n))
    if n != heads:
        slopes = np.concatenate([slopes[1::2], slopes[::2]])[:heads]
    return slopes


def forward(config, t, ids):
    """Logits [T, vocab] for a list of token ids."""
    p = {k: v[1].astype(np.float64) for k, v in t.items()}
    C, H, T = config["d_model"], config["n_heads"], len(ids)
    D, eps = C // H, config.get("layer_norm_epsilon", 1e-5)
    attn = config.get("attn_config") or {}
    assert not attn.get("qk_ln"), "transformers' MPT does not implement qk_ln"
    assert T <= config["max_seq_len"]
    clip = attn.get("clip_qkv")
    scale = attn.get("softmax_scale") or 1.0 / math.sqrt(C / H)
    positions = np.arange(1 - config["max_seq_len"], 1, dtype=np.float64)[-T:]  # the last T keys
    alibi = alibi_slopes(H)[:, None, None] * positions[None, None, :]  # [H, 1, T]
    causal = np.tril(np.ones((T, T), dtype=bool))
    h = p["transformer.wte.weight"][ids]
    for l in range(config["n_layers"]):
        B = f"transformer.blocks.{l}."
        a = layer_norm(h, p[B + "norm_1.weight"], eps)
        qkv = a @ p[B + "attn.Wqkv.weight"].T
        if clip:
            qkv = np.clip(qkv, -clip, clip)
        q, k, v = (x.reshape(T, H, D).transpose(1, 0, 2) for x in np.split(qkv, 3, axis=-1))
        scores = q @ k.transpose(0, 2, 1) * scale + alibi
        scores = np.where(causal, scores, -np.inf)
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        probs = scores / scores.sum(-1, keepdims=True)
        y = (probs @ v).transpose(1, 0, 2).reshape(T, C)
        h = h + y @ p[B + "attn.out_proj.weight"].T
        m = layer_norm(h, p[B + "norm_2.weight"], eps)
        h = h + gelu(m @ p[B + "ffn.up_proj.weight"].T) @ p[B + "ffn.down_proj.weight"].T
    h = layer_norm(h, p["transformer.norm_f.weight"], eps)
    return h @ p["transformer.wte.weight"].T


if __name__ == "__main__":
    main(forward)
