#!/usr/bin/env python3
"""An independent Llama forward pass in NumPy, written from Hugging Face's
documented LlamaForCausalLM semantics (transformers' modeling_llama.py and
modeling_rope_utils.py), to check what `kiln export --format hf` writes
without Transformers:

  h = embed_tokens[ids]
  per layer:  a = input_layernorm(h)        (RMSNorm: x / sqrt(mean(x^2) + eps) * w)
              q, k, v = q_proj(a), k_proj(a), v_proj(a)   (nn.Linear: x @ W^T (+ b))
              q, k = rotary(q), rotary(k)  (rotate_half: dim i pairs with i + head_dim/2)
              k, v repeated num_heads / num_key_value_heads times (repeat_kv: query
              head h reads key/value head h // n_rep)
              attn = softmax(q k^T / sqrt(head_dim), causal) v; h += o_proj(attn)
              m = post_attention_layernorm(h); h += down_proj(silu(gate_proj(m)) * up_proj(m))
  logits = norm(h) @ lm_head^T    (lm_head = embed_tokens when tie_word_embeddings)

Rotary: inv_freq[i] = rope_theta^(-2i / head_dim), rescaled by rope_scaling
{"rope_type": "llama3"} as _compute_llama3_parameters does; angle = position
* inv_freq, duplicated over both halves. Everything runs in float64.
Commands as in hf_numpy_common.py.
"""
import math
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_numpy_common import main  # noqa: E402


def rms_norm(x, w, eps):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def silu(x):
    return x / (1.0 + np.exp(-x))


def inverse_frequencies(config, head_dim):
    inv_freq = 1.0 / config.get("rope_theta", 10000.0) ** (np.arange(0, head_dim, 2) / head_dim)
    scaling = config.get("rope_scaling")
    if not scaling:
        return inv_freq
    assert scaling.get("rope_type", scaling.get("type")) == "llama3", scaling
    factor, low, high = scaling["factor"], scaling["low_freq_factor"], scaling["high_freq_factor"]
    old_context = scaling["original_max_position_embeddings"]
    wavelen = 2 * math.pi / inv_freq
    scaled = np.where(wavelen > old_context / low, inv_freq / factor, inv_freq)
    smooth = (old_context / wavelen - low) / (high - low)
    smoothed = (1 - smooth) * scaled / factor + smooth * scaled
    medium = ~(wavelen < old_context / high) & ~(wavelen > old_context / low)
    return np.where(medium, smoothed, scaled)


def rotate_half(x):
    half = x.shape[-1] // 2
    return np.concatenate([-x[..., half:], x[..., :half]], axis=-1)


def forward(config, t, ids, positions=None, visible=None):
    """Logits [T, vocab] for a list of token ids, at positions 0..T-1 with
    a causal mask unless positions [T] and visible [T, T] (query i sees key
    j) say otherwise (tests/tools/documents_numpy.py)."""
    p = {k: v[1].astype(np.float64) for k, v in t.items()}
    C, H = config["hidden_size"], config["num_attention_heads"]
    G = config.get("num_key_value_heads") or H
    D = config.get("head_dim") or C // H
    eps, T = config["rms_norm_eps"], len(ids)
    assert config["hidden_act"] == "silu"

    def linear(x, name):
        y = x @ p[name + ".weight"].T
        return y + p[name + ".bias"] if name + ".bias" in p else y

    positions = np.arange(T) if positions is None else np.asarray(positions)
    angles = positions[:, None] * inverse_frequencies(config, D)[None, :]
    angles = np.concatenate([angles, angles], axis=-1)  # [T, D]
    cos, sin = np.cos(angles), np.sin(angles)
    causal = np.tril(np.ones((T, T), dtype=bool)) if visible is None else visible
    h = p["model.embed_tokens.weight"][ids]
    for l in range(config["num_hidden_layers"]):
        L = f"model.layers.{l}."
        a = rms_norm(h, p[L + "input_layernorm.weight"], eps)
        q = linear(a, L + "self_attn.q_proj").reshape(T, H, D).transpose(1, 0, 2)
        k = linear(a, L + "self_attn.k_proj").reshape(T, G, D).transpose(1, 0, 2)
        v = linear(a, L + "self_attn.v_proj").reshape(T, G, D).transpose(1, 0, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k, v = np.repeat(k, H // G, axis=0), np.repeat(v, H // G, axis=0)
        scores = q @ k.transpose(0, 2, 1) / math.sqrt(D)
        scores = np.where(causal, scores, -np.inf)
        scores = np.exp(scores - scores.max(-1, keepdims=True))
        probs = scores / scores.sum(-1, keepdims=True)
        y = (probs @ v).transpose(1, 0, 2).reshape(T, H * D)
        h = h + linear(y, L + "self_attn.o_proj")
        m = rms_norm(h, p[L + "post_attention_layernorm.weight"], eps)
        h = h + linear(silu(linear(m, L + "mlp.gate_proj")) * linear(m, L + "mlp.up_proj"), L + "mlp.down_proj")
    h = rms_norm(h, p["model.norm.weight"], eps)
    head = p["model.embed_tokens.weight"] if config.get("tie_word_embeddings", False) else p["lm_head.weight"]
    return h @ head.T


if __name__ == "__main__":
    main(forward)
