#!/usr/bin/env python3
"""An independent GPT-2 forward pass in NumPy, written from Hugging Face's
documented GPT2LMHeadModel semantics (transformers' modeling_gpt2.py), to
check what `kiln export --format hf` writes without Transformers:

  h = wte[ids] + wpe[positions]
  per block:  a = ln_1(h); qkv = a @ c_attn.weight + c_attn.bias  (Conv1D: [in, out])
              q, k, v = split(qkv, n_embd)  (blocked Q|K|V, then heads of head_dim)
              attn = softmax(q k^T / sqrt(head_dim), causal) v; h += c_proj(attn)
              h += mlp.c_proj(act(mlp.c_fc(ln_2(h))))   (activation_function: gelu_new, the
                                                         tanh form, or gelu, the exact erf form)
  logits = ln_f(h) @ wte^T                                        (tied LM head)

Everything runs in float64. Tokens are bytes (kiln's vocab-256 models).

  hf_gpt2_numpy.py logits DIR PROMPT       the last position's logits, JSON
  hf_gpt2_numpy.py greedy DIR PROMPT N     N greedy bytes after PROMPT
  hf_gpt2_numpy.py tensors DIR             name dtype shape, one line each
"""
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_numpy_common import load_dir, main  # noqa: E402  (the shared loader and driver)


def layer_norm(x, w, b, eps):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)  # biased, as torch.nn.LayerNorm
    return (x - mean) / np.sqrt(var + eps) * w + b


def gelu_new(x):
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))


def gelu(x):
    return 0.5 * x * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))


ACTIVATIONS = {"gelu_new": gelu_new, "gelu": gelu}


def forward(config, t, ids, positions=None, visible=None):
    """Logits [T, vocab] for a list of token ids, at positions 0..T-1 with
    a causal mask unless positions [T] and visible [T, T] (query i sees key
    j) say otherwise (tests/tools/documents_numpy.py)."""
    p = {k: v[1].astype(np.float64) for k, v in t.items()}
    C, H, eps = config["n_embd"], config["n_head"], config["layer_norm_epsilon"]
    D, T = C // H, len(ids)
    act = ACTIVATIONS[config["activation_function"]]
    positions = np.arange(T) if positions is None else np.asarray(positions)
    h = p["transformer.wte.weight"][ids] + p["transformer.wpe.weight"][positions]
    causal = np.tril(np.ones((T, T), dtype=bool)) if visible is None else visible
    for l in range(config["n_layer"]):
        L = f"transformer.h.{l}."
        a = layer_norm(h, p[L + "ln_1.weight"], p[L + "ln_1.bias"], eps)
        qkv = a @ p[L + "attn.c_attn.weight"] + p[L + "attn.c_attn.bias"]
        q, k, v = (x.reshape(T, H, D).transpose(1, 0, 2) for x in np.split(qkv, 3, axis=-1))
        scores = q @ k.transpose(0, 2, 1) / np.sqrt(D)
        scores = np.where(causal, scores, -np.inf)
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        probs = scores / scores.sum(-1, keepdims=True)
        y = (probs @ v).transpose(1, 0, 2).reshape(T, C)
        h = h + y @ p[L + "attn.c_proj.weight"] + p[L + "attn.c_proj.bias"]
        m = layer_norm(h, p[L + "ln_2.weight"], p[L + "ln_2.bias"], eps)
        m = act(m @ p[L + "mlp.c_fc.weight"] + p[L + "mlp.c_fc.bias"])
        h = h + m @ p[L + "mlp.c_proj.weight"] + p[L + "mlp.c_proj.bias"]
    h = layer_norm(h, p["transformer.ln_f.weight"], p["transformer.ln_f.bias"], eps)
    return h @ p["transformer.wte.weight"].T


if __name__ == "__main__":
    main(forward)
