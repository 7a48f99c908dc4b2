#!/usr/bin/env python3
"""The same training step as kiln in PyTorch (fp32, AdamW), for comparison in
bench/train_throughput.sh. By default GPT-2 (LayerNorm, GELU(tanh) MLP as kiln's
default, learned
positions, biases, tied LM head); the Llama options switch to RMSNorm,
SwiGLU, RoPE, grouped-query attention, no biases and an untied output layer,
with Megatron's defaults (eps 1e-5, rotary base 10000, FFN
int(4h * 2/3 / 64) * 64 under SwiGLU); --exact-gelu matches kiln's flag of
that name (erf GELU). --device cuda runs on a GPU (fp32 with TF32 off
unless --dtype bf16, which autocasts to bf16 as PyTorch users train).
Prints mean ms/step over all iterations but the first."""
import argparse
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    # torch 1.13 (Debian 12) has no nn.RMSNorm.
    def __init__(self, c, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(c))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def norm(a):
    return RMSNorm(a.hidden) if a.rmsnorm else nn.LayerNorm(a.hidden)


def rope_tables(seq, dim, base=10000.0):
    inv = 1.0 / base ** (torch.arange(0, dim, 2).float() / dim)
    ang = torch.outer(torch.arange(seq).float(), inv)
    ang = torch.cat((ang, ang), dim=-1)  # Megatron's non-interleaved halves
    return ang.cos(), ang.sin()


def rotate(x, cos, sin):
    x1, x2 = x.chunk(2, dim=-1)
    return x * cos + torch.cat((-x2, x1), dim=-1) * sin


class Block(nn.Module):
    def __init__(self, a):
        super().__init__()
        c, bias = a.hidden, not a.no_bias
        self.h, self.g, self.d = a.heads, a.query_groups or a.heads, c // a.heads
        self.swiglu = a.swiglu
        self.gelu_approximate = "none" if a.exact_gelu else "tanh"
        ffn = int(4 * c * 2 / 3 / 64) * 64 if a.swiglu else 4 * c
        self.ln1, self.ln2 = norm(a), norm(a)
        self.qkv = nn.Linear(c, (self.h + 2 * self.g) * self.d, bias=bias)
        self.proj = nn.Linear(c, c, bias=bias)
        self.fc1 = nn.Linear(c, 2 * ffn if a.swiglu else ffn, bias=bias)
        self.fc2 = nn.Linear(ffn, c, bias=bias)

    def forward(self, x, rope):
        b, t, c = x.shape
        q, k, v = self.qkv(self.ln1(x)).split([self.h * self.d, self.g * self.d, self.g * self.d], dim=2)
        q = q.view(b, t, self.h, self.d).transpose(1, 2)
        k, v = (z.view(b, t, self.g, self.d).transpose(1, 2) for z in (k, v))
        if rope is not None:
            q, k = rotate(q, *rope), rotate(k, *rope)
        if self.g != self.h:
            k, v = (z.repeat_interleave(self.h // self.g, dim=1) for z in (k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(self.d)
        mask = torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1)
        att = att.masked_fill(mask, float("-inf")).softmax(-1)
        x = x + self.proj((att @ v).transpose(1, 2).reshape(b, t, c))
        h = self.fc1(self.ln2(x))
        if self.swiglu:
            gate, up = h.chunk(2, dim=-1)
            h = F.silu(gate) * up
        else:
            h = F.gelu(h, approximate=self.gelu_approximate)
        return x + self.fc2(h)


class GPT(nn.Module):
    def __init__(self, a):
        super().__init__()
        self.wte = nn.Embedding(a.vocab, a.hidden)
        self.wpe = None if a.rope else nn.Embedding(a.seq, a.hidden)
        self.rope = rope_tables(a.seq, a.hidden // a.heads) if a.rope else None
        self.blocks = nn.ModuleList(Block(a) for _ in range(a.layers))
        self.lnf = norm(a)
        self.out = nn.Linear(a.hidden, a.vocab, bias=False) if a.untie else None

    def forward(self, idx, targets):
        x = self.wte(idx)
        if self.wpe is not None:
            x = x + self.wpe(torch.arange(idx.shape[1], device=idx.device))
        for blk in self.blocks:
            x = blk(x, self.rope)
        x = self.lnf(x)
        logits = self.out(x) if self.out is not None else x @ self.wte.weight.t()
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))


def main():
    p = argparse.ArgumentParser()
    for name in ("layers", "hidden", "heads", "vocab", "seq", "micro-batch", "iters", "threads"):
        p.add_argument("--" + name, type=int, required=True)
    p.add_argument("--query-groups", type=int, default=0, help="grouped-query attention (0: one per head)")
    p.add_argument("--device", default="cpu", help="cpu or cuda")
    p.add_argument("--dtype", default="fp32", choices=("fp32", "bf16"), help="bf16: autocast (cuda or cpu)")
    for name in ("rmsnorm", "swiglu", "rope", "untie", "no-bias", "exact-gelu"):
        p.add_argument("--" + name, action="store_true")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    cuda = a.device == "cuda"
    if cuda:  # fp32 means fp32: no TF32 tensor cores behind its back
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    model = GPT(a).to(a.device)
    if model.rope is not None:
        model.rope = tuple(t.to(a.device) for t in model.rope)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.1)
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    times = []
    for _ in range(a.iters):
        idx = torch.randint(0, a.vocab, (a.micro_batch, a.seq), device=a.device)
        tgt = torch.randint(0, a.vocab, (a.micro_batch, a.seq), device=a.device)
        sync()
        t0 = time.perf_counter()
        with torch.autocast(a.device, dtype=torch.bfloat16, enabled=a.dtype == "bf16"):
            loss = model(idx, tgt)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sync()
        times.append(time.perf_counter() - t0)
    print("%.1f" % (1000 * sum(times[1:]) / max(1, len(times) - 1)))


if __name__ == "__main__":
    main()
