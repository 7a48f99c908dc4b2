/*
 * kiln's op table: one row per op, the only place an op is defined.
 *
 * Pure C (C11), part of the plugin SDK. The enum `kiln_op` is generated from
 * the rows below, so an op's code, name, arity, properties and shape rule can
 * never disagree between the host and a plugin. Everything else that is per
 * op (its VJP, its reference function, one kernel per backend, conformance
 * cases) is listed in docs/ADDING_AN_OP.md.
 *
 * Codes are append-only: a code is never reused or renumbered, and a new op
 * goes at the end with the next code (the checks at the bottom refuse a gap,
 * a duplicate or a row out of order).
 *
 * A row:  X(NAME, code, "name", inputs, outputs, iattrs, fattrs,
 *           properties, tolerance, shape rule, "inputs", "outputs")
 *
 *   inputs/outputs/iattrs/fattrs  exact counts; KILN_OP_ANY where the count
 *                 is free (CONCAT's inputs, PERMUTE's perm, SPLIT's outputs),
 *                 which its shape rule then checks.
 *   properties    KILN_OPP_* below, or 0.
 *   tolerance     the conformance class (KILN_TOL_*): what NMSE against the
 *                 reference a backend may show.
 *   shape rule    KILN_RULE_*: the shape and attribute rule, written once in
 *                 kiln/op_rules.hpp. Ops with the same signature share one
 *                 (RMSNorm and LayerNorm both use KILN_RULE_NORM).
 *   inputs/outputs  the signature: space-separated "name:dtype". Dtypes:
 *                 'f'  a float tensor of the node's float dtype: f32, bf16
 *                      or f16, the same for every 'f' input of the node (an
 *                      'f' output has it too; f32 for a node with no 'f'
 *                      input, FILL);
 *                 'F'  f32 only: optimizer state, host tables (RoPE's cos
 *                      and sin, ALiBi's slopes), and outputs that are
 *                      reductions kept in fp32 (losses, sums of squares, the
 *                      vocab-parallel loss sums);
 *                 'i'  i32;   '*'  any dtype;
 *                 and for outputs only '=' input 0's dtype, 't' the float
 *                 dtype iattrs[0] names (CAST). A trailing "..." repeats the
 *                 last one (KILN_OP_ANY counts). Rule errors use the names.
 *                 Low precision is storage only: an op on bf16/f16 reads
 *                 them widened to f32, computes (and reduces, and
 *                 accumulates GEMMs) in f32 or wider, and rounds once when
 *                 it stores a bf16/f16 output (the reference interpreter is
 *                 that definition).
 *
 * The exact math of each op is in the comment above its row; the serialized
 * form that carries ops to a plugin is in kiln/ir.h.
 */
#ifndef KILN_OPS_H
#define KILN_OPS_H

#include <stdint.h>

/* A count the op's shape rule checks instead of the table. */
#define KILN_OP_ANY (-1)

/* ---- properties */
/* Reads element k of every input before writing element k, so an output may
 * share memory with an input (ir.h's aliasing contract; the memory planner
 * and fusing backends rely on it). */
#define KILN_OPP_ELEMENTWISE 0x1u
/* Meant to overwrite an input in place (its graph output `updates` it). */
#define KILN_OPP_IN_PLACE 0x2u
/* Runs on the host across ranks (MPI) between compiled pieces of a graph; a
 * plugin's compile never receives it and op_supported must say 0. */
#define KILN_OPP_HOST_COLLECTIVE 0x4u
/* Moves elements without arithmetic: any dtype, exact results. */
#define KILN_OPP_LAYOUT 0x8u

/* ---- process groups. Every host collective's last int attribute names the
 * group of ranks it runs over: one of a job's parallel dimensions, in
 * Megatron's RankGenerator order (trainer/parallel/parallel_state.h uses the
 * same names). The host gives the executor one group per name it runs with;
 * a group of one rank (a dimension of size 1) makes every collective the
 * identity. Append-only, as the op codes. */
typedef enum kiln_group {
  KILN_GROUP_TP = 0, /* tensor parallelism (and its sequence parallelism) */
  KILN_GROUP_CP = 1, /* context parallelism */
  KILN_GROUP_EP = 2, /* expert parallelism */
  KILN_GROUP_DP = 3, /* data parallelism */
  KILN_GROUP_PP = 4, /* pipeline parallelism */
  KILN_GROUP_COUNT_
} kiln_group;

/* ---- conformance tolerance classes (NMSE = sum((a-b)^2) / sum(a^2)) */
typedef enum kiln_tolerance {
  KILN_TOL_EXACT = 0,       /* bitwise: data movement, selection */
  KILN_TOL_ELEMENTWISE = 1, /* 1e-7: elementwise, norms, losses, optimizer */
  KILN_TOL_GEMM = 2         /* 1e-6: matmul, softmax (long reductions) */
} kiln_tolerance;

/* ---- shape rules (kiln/op_rules.hpp says what each checks and infers) */
typedef enum kiln_shape_rule {
  KILN_RULE_GIVEN_SHAPE = 0,       /* () -> output of the caller's shape */
  KILN_RULE_BROADCAST = 1,         /* (a, b suffix of a) -> a */
  KILN_RULE_SAME = 2,              /* inputs of one shape -> that shape */
  KILN_RULE_MATMUL = 3,            /* batched op(a) @ op(b) */
  KILN_RULE_EMBEDDING = 4,         /* (table [V, C], ids [...]) -> [..., C] */
  KILN_RULE_EMBEDDING_GRAD = 5,    /* (dy [..., C], ids [...]) -> [V, C] */
  KILN_RULE_NORM = 6,              /* (x [..., C], params [C]...) -> x */
  KILN_RULE_NORM_GRAD = 7,         /* (x, params [C]..., dy) -> (dx, dparams [C]...) */
  KILN_RULE_SQUARE_ROWS = 8,       /* x [..., T, T] -> x */
  KILN_RULE_LOSS = 9,              /* (logits [N, V], targets [N]) -> [1] */
  KILN_RULE_LOSS_GRAD = 10,        /* (logits, targets, dloss [1]) -> logits */
  KILN_RULE_SUM_TO_SUFFIX = 11,    /* x -> the caller's non-empty suffix of x */
  KILN_RULE_RESHAPE = 12,          /* x -> the caller's shape, same count */
  KILN_RULE_PERMUTE = 13,          /* x -> dims permuted by iattrs */
  KILN_RULE_SPLIT = 14,            /* x -> iattrs[1] equal parts along iattrs[0] */
  KILN_RULE_CONCAT = 15,           /* xs -> joined along iattrs[0] */
  KILN_RULE_TO_SCALAR = 16,        /* x -> [1] */
  KILN_RULE_ADAMW = 17,            /* (p, g, m, v same, hparams [5][, clip [1]]) -> (p, m, v) */
  KILN_RULE_ALL_REDUCE = 18,       /* x -> x; iattrs[0] in {0 sum, 1 max}, iattrs[1] the group */
  KILN_RULE_ROW_REDUCE = 19,       /* x [..., V] -> [...], rank >= 2 */
  KILN_RULE_SHARD_LOSS = 20,       /* (logits [N, V], targets [N], rowmax [N]) -> [N, 2] */
  KILN_RULE_SHARD_LOSS_GRAD = 21,  /* (logits, targets, rowmax, dsums [N, 2]) -> logits */
  KILN_RULE_SUMS_LOSS = 22,        /* (sums [N, 2]) -> [1] */
  KILN_RULE_SUMS_LOSS_GRAD = 23,   /* (sums, dloss [1]) -> sums */
  KILN_RULE_ROPE = 24,             /* (x [..., T, D], cos [T, R], sin [T, R]) -> x; 2R <= D */
  KILN_RULE_DROPOUT = 25,          /* (x, key [4] i32) -> x; 0 <= p < 1, site/period/stride checked */
  KILN_RULE_ALIBI = 26,            /* (x [..., H, T, T], slopes [H]) -> x */
  KILN_RULE_CAST = 27,             /* x -> x's shape in the float dtype iattrs[0] names */
  KILN_RULE_GATHER = 28,           /* x -> x with dim iattrs[0] times iattrs[1] (the group's ranks) */
  KILN_RULE_SCATTER = 29,          /* x -> x with dim iattrs[0] divided by iattrs[1] (the group's ranks) */
  KILN_RULE_DROPOUT_KEYED = 30,    /* (x, key [5] i32) -> x; 0 <= p < 1, period/stride checked */
  KILN_RULE_DOCUMENT_ROWS = 31,    /* (x [B, ..., T, T], starts [B, T] i32) -> x */
  KILN_RULE_CAST_FP8 = 32,         /* (x, scale [1]) -> (x[, amax [1]]); format in {0, 1}, current in {0, 1} */
  KILN_RULE_ATTENTION = 33,        /* (q, k, v [..., T, D][, dy]) -> y, or (dq, dk, dv), all of q's shape */
  KILN_RULE_ATTENTION_DROPOUT = 34 /* ATTENTION's, then key [5] i32; 0 <= p < 1, period/stride checked */
} kiln_shape_rule;

#define KILN_E KILN_OPP_ELEMENTWISE
#define KILN_IP KILN_OPP_IN_PLACE
#define KILN_HC KILN_OPP_HOST_COLLECTIVE
#define KILN_LY KILN_OPP_LAYOUT
/* clang-format off */
#define KILN_OPS(X)                                                                                                    \
  /* () -> y: every element = fattrs[0]. */                                                                            \
  X(FILL, 0, "fill", 0, 1, 0, 1, KILN_E, ELEMENTWISE, GIVEN_SHAPE, "", "y:f")                                          \
  /* (a, b) -> a + b, b broadcast as a suffix of a. */                                                                 \
  X(ADD, 1, "add", 2, 1, 0, 0, KILN_E, ELEMENTWISE, BROADCAST, "a:f b:f", "y:f")                                       \
  /* (a, b) -> a * b, b broadcast as a suffix of a. */                                                                 \
  X(MUL, 2, "mul", 2, 1, 0, 0, KILN_E, ELEMENTWISE, BROADCAST, "a:f b:f", "y:f")                                       \
  /* (x) -> x * fattrs[0]. */                                                                                          \
  X(SCALE, 3, "scale", 1, 1, 0, 1, KILN_E, ELEMENTWISE, SAME, "x:f", "y:f")                                            \
  /* (x) -> GELU with the tanh approximation. */                                                                       \
  X(GELU, 4, "gelu", 1, 1, 0, 0, KILN_E, ELEMENTWISE, SAME, "x:f", "y:f")                                              \
  /* (x, dy) -> dy * GELU'(x). */                                                                                      \
  X(GELU_GRAD, 5, "gelu_grad", 2, 1, 0, 0, KILN_E, ELEMENTWISE, SAME, "x:f dy:f", "dx:f")                              \
  /* (a, b) -> op(a) @ op(b); iattrs = {trans_a, trans_b}. Equal rank >= 2, equal leading (batch) dims;                \
   * a [.., M, K] (or [.., K, M] if trans_a), b [.., K, N] (or [.., N, K] if trans_b); y [.., M, N]. */                \
  X(MATMUL, 6, "matmul", 2, 1, 2, 0, 0, GEMM, MATMUL, "a:f b:f", "y:f")                                                \
  /* (table [V, C], ids [...] i32) -> y [..., C]: y[i] = table[ids[i]]; an id outside [0, V) is an                     \
   * error at execute. */                                                                                              \
  X(EMBEDDING, 7, "embedding", 2, 1, 0, 0, 0, ELEMENTWISE, EMBEDDING, "table:f ids:i", "y:f")                          \
  /* (dy [..., C], ids [...] i32) -> dtable [V, C]; iattrs = {V}. Scatter-add of dy rows into row ids[i];              \
   * rows never indexed are 0. */                                                                                      \
  X(EMBEDDING_GRAD, 8, "embedding_grad", 2, 1, 1, 0, 0, ELEMENTWISE, EMBEDDING_GRAD, "dy:f ids:i", "dtable:f")         \
  /* (x [..., C], gamma [C], beta [C]) -> y; fattrs = {eps}. Normalizes over the last dim with biased                  \
   * variance: y = (x - mean) / sqrt(var + eps) * gamma + beta. */                                                     \
  X(LAYERNORM, 9, "layernorm", 3, 1, 0, 1, 0, ELEMENTWISE, NORM, "x:f gamma:f beta:f", "y:f")                          \
  /* (x, gamma, dy) -> (dx, dgamma, dbeta); fattrs = {eps}. */                                                         \
  X(LAYERNORM_GRAD, 10, "layernorm_grad", 3, 3, 0, 1, 0, ELEMENTWISE, NORM_GRAD,                                       \
    "x:f gamma:f dy:f", "dx:f dgamma:f dbeta:f")                                                                       \
  /* (x [..., T, T]) -> y; fattrs = {scale}. Row i: softmax over j <= i of scale * x[i, j]; y[i, j] = 0                \
   * for j > i. */                                                                                                     \
  X(CAUSAL_SOFTMAX, 11, "causal_softmax", 1, 1, 0, 1, 0, GEMM, SQUARE_ROWS, "x:f", "y:f")                              \
  /* (y, dy) -> dx; fattrs = {scale}. dx = scale * y * (dy - sum_j dy*y), the sum over the whole row                   \
   * (masked entries add 0 since y is 0 there). */                                                                     \
  X(SOFTMAX_GRAD, 12, "softmax_grad", 2, 1, 0, 1, 0, GEMM, SAME, "y:f dy:f", "dx:f")                                   \
  /* (logits [N, V], targets [N] i32) -> loss [1]: mean over N of -log softmax(logits)[target]. */                     \
  X(CROSS_ENTROPY, 13, "cross_entropy", 2, 1, 0, 0, 0, ELEMENTWISE, LOSS, "logits:f targets:i", "loss:F")              \
  /* (logits, targets, dloss [1]) -> dlogits [N, V]. */                                                                \
  X(CROSS_ENTROPY_GRAD, 14, "cross_entropy_grad", 3, 1, 0, 0, 0, ELEMENTWISE, LOSS_GRAD,                               \
    "logits:f targets:i dloss:F", "dlogits:f")                                                                         \
  /* (x [..., S]) -> y [S]: sum over all leading dims; the output shape is a non-empty suffix S of the                 \
   * input shape. */                                                                                                   \
  X(SUM_TO, 15, "sum_to", 1, 1, 0, 0, 0, ELEMENTWISE, SUM_TO_SUFFIX, "x:f", "y:f")                                     \
  /* (x) -> y with the output's shape and the same element count. */                                                   \
  X(RESHAPE, 16, "reshape", 1, 1, 0, 0, KILN_LY, EXACT, RESHAPE, "x:*", "y:=")                                         \
  /* (x) -> y; iattrs = perm: y.dims[i] = x.dims[perm[i]]. */                                                          \
  X(PERMUTE, 17, "permute", 1, 1, KILN_OP_ANY, 0, KILN_LY, EXACT, PERMUTE, "x:*", "y:=")                               \
  /* (x) -> (y_0 .. y_{n-1}); iattrs = {axis, n}: n equal parts along axis. */                                         \
  X(SPLIT, 18, "split", 1, KILN_OP_ANY, 2, 0, KILN_LY, EXACT, SPLIT, "x:*", "y:=...")                                  \
  /* (x_0 .. x_{n-1}) -> y; iattrs = {axis}: concatenation along axis; one dtype. */                                   \
  X(CONCAT, 19, "concat", KILN_OP_ANY, 1, 1, 0, KILN_LY, EXACT, CONCAT, "x:*...", "y:=")                               \
  /* (x) -> y [1] = sum of x^2. */                                                                                     \
  X(SUM_SQUARES, 20, "sum_squares", 1, 1, 0, 0, 0, ELEMENTWISE, TO_SCALAR, "x:f", "y:F")                               \
  /* (param, grad, m, v, hparams [5]) -> (param', m', v').                                                             \
   * hparams = {lr, weight_decay, 1/(1-beta1^t), 1/(1-beta2^t), grad_scale};                                           \
   * fattrs = {beta1, beta2, eps}; iattrs = {apply_weight_decay}.                                                      \
   *   g  = grad * grad_scale                                                                                          \
   *   m' = beta1 m + (1-beta1) g;  v' = beta2 v + (1-beta2) g^2                                                       \
   *   p' = p - lr * (m' c1 / (sqrt(v' c2) + eps) + wd * p)   (wd if applied)                                          \
   * Decoupled weight decay as in PyTorch's AdamW. */                                                                  \
  X(ADAMW, 21, "adamw", 5, 3, 1, 3, KILN_E | KILN_IP, ELEMENTWISE, ADAMW,                                              \
    "param:F grad:F m:F v:F hparams:F", "param:F m:F v:F")                                                             \
  /* ---- tensor parallelism (a plugin built against an older table reports these unsupported and the                  \
   * host falls back). */                                                                                              \
  /* (x) -> y, same shape: the elementwise sum (iattrs[0] = 0) or max (iattrs[0] = 1) of x over the ranks              \
   * of the group iattrs[1] names (kiln_group). A host collective. */                                                  \
  X(ALL_REDUCE, 22, "all_reduce", 1, 1, 2, 0, KILN_HC, ELEMENTWISE, ALL_REDUCE, "x:F", "y:F")                          \
  /* (x [..., V]) -> y [...]: the maximum over the last dim (rank >= 2); a row holding a NaN gives NaN. */             \
  X(ROW_MAX, 23, "row_max", 1, 1, 0, 0, 0, EXACT, ROW_REDUCE, "x:f", "y:f")                                            \
  /* Vocab-parallel cross-entropy, part 1, over one shard of the vocab:                                                \
   * (logits [N, V], targets [N] i32, rowmax [N]) -> sums [N, 2] with                                                  \
   *   sums[i][0] = sum_j exp(logits[i][j] - rowmax[i])                                                                \
   *   sums[i][1] = logits[i][t] - rowmax[i] if 0 <= t = targets[i] < V, else 0                                        \
   * (targets index the shard; ids of other shards lie outside [0, V)). */                                             \
  X(CROSS_ENTROPY_SHARD, 24, "cross_entropy_shard", 3, 1, 0, 0, 0, ELEMENTWISE, SHARD_LOSS,                            \
    "logits:f targets:i rowmax:f", "sums:F")                                                                           \
  /* (logits, targets, rowmax, dsums [N, 2]) -> dlogits [N, V]:                                                        \
   *   dlogits[i][j] = dsums[i][0] exp(logits[i][j] - rowmax[i]) + (j == t ? dsums[i][1] : 0). */                      \
  X(CROSS_ENTROPY_SHARD_GRAD, 25, "cross_entropy_shard_grad", 4, 1, 0, 0, 0, ELEMENTWISE, SHARD_LOSS_GRAD,             \
    "logits:f targets:i rowmax:f dsums:F", "dlogits:f")                                                                \
  /* Part 2, on the group-summed sums: (sums [N, 2]) -> loss [1] = mean over N of                                      \
   * log(sums[i][0]) - sums[i][1]. */                                                                                  \
  X(CROSS_ENTROPY_FROM_SUMS, 26, "cross_entropy_from_sums", 1, 1, 0, 0, 0, ELEMENTWISE, SUMS_LOSS, "sums:F", "loss:F") \
  /* (sums, dloss [1]) -> dsums [N, 2] = {dloss / (N sums[i][0]), -dloss / N}. */                                      \
  X(CROSS_ENTROPY_FROM_SUMS_GRAD, 27, "cross_entropy_from_sums_grad", 2, 1, 0, 0, 0, ELEMENTWISE, SUMS_LOSS_GRAD,      \
    "sums:F dloss:F", "dsums:F")                                                                                       \
  /* ---- model families (Llama) */                                                                                    \
  /* (x [..., C], gamma [C]) -> y; fattrs = {eps}. Root-mean-square norm over the last dim (no mean, no bias):         \
   * y = x / sqrt(mean(x^2) + eps) * gamma. */                                                                         \
  X(RMSNORM, 28, "rmsnorm", 2, 1, 0, 1, 0, ELEMENTWISE, NORM, "x:f gamma:f", "y:f")                                    \
  /* (x, gamma, dy) -> (dx, dgamma); fattrs = {eps}. With r = 1/sqrt(mean(x^2) + eps), xhat = x r,                     \
   * g = dy gamma: dx = r (g - xhat mean(g xhat)), dgamma = sum over rows of dy xhat. */                               \
  X(RMSNORM_GRAD, 29, "rmsnorm_grad", 3, 2, 0, 1, 0, ELEMENTWISE, NORM_GRAD, "x:f gamma:f dy:f", "dx:f dgamma:f")      \
  /* (x) -> y = x sigmoid(x) = x / (1 + exp(-x)) (SiLU, the gate of Llama's SwiGLU); silu(-inf) = NaN, as              \
   * the formula (and PyTorch) gives. */                                                                               \
  X(SILU, 30, "silu", 1, 1, 0, 0, KILN_E, ELEMENTWISE, SAME, "x:f", "y:f")                                             \
  /* (x, dy) -> dx = dy s (1 + x (1 - s)), s = sigmoid(x). */                                                          \
  X(SILU_GRAD, 31, "silu_grad", 2, 1, 0, 0, KILN_E, ELEMENTWISE, SAME, "x:f dy:f", "dx:f")                             \
  /* (x) -> y; fattrs = {lo, hi}, lo <= hi: y = min(max(x, lo), hi), NaN stays NaN (as torch.clamp).                   \
   * MPT's QKV clipping. */                                                                                            \
  X(CLAMP, 32, "clamp", 1, 1, 0, 2, KILN_E, EXACT, SAME, "x:f", "y:f")                                                 \
  /* (x, dy) -> dx; fattrs = {lo, hi}: dx = dy where lo <= x <= hi (inclusive, as PyTorch's backward),                 \
   * else 0 (NaN x included). */                                                                                       \
  X(CLAMP_GRAD, 33, "clamp_grad", 2, 1, 0, 2, KILN_E, EXACT, SAME, "x:f dy:f", "dx:f")                                 \
  /* (x [..., T, D], cos [T, R], sin [T, R]) -> y; iattrs = {interleaved}; 1 <= R, 2R <= D. Rotary position            \
   * embedding: the row at position t (the index along dim -2) rotates R feature pairs (a, b) by the angles            \
   * whose cosines and sines are cos[t, i] and sin[t, i] (the host computes the tables):                               \
   *   a' = a cos - b sin,  b' = b cos + a sin,                                                                        \
   * pair i being (x[i], x[i + R]) if interleaved = 0 (rotate_half: Megatron's default, HF Llama) or                   \
   * (x[2i], x[2i + 1]) if interleaved = 1 (GPT-J). Features past the first 2R pass through unchanged                  \
   * (--rotary-percent). Not elementwise: y[i] reads x[i + R]. */                                                      \
  X(ROPE, 34, "rope", 3, 1, 1, 0, 0, ELEMENTWISE, ROPE, "x:f cos:F sin:F", "y:f")                                      \
  /* (dy, cos, sin) -> dx; iattrs = {interleaved}. The transpose of ROPE, a rotation by the negated angles:            \
   * a pair (a, b) of dy gives (a cos + b sin, b cos - a sin) in dx. */                                                \
  X(ROPE_GRAD, 35, "rope_grad", 3, 1, 1, 0, 0, ELEMENTWISE, ROPE, "dy:f cos:F sin:F", "dx:f")                          \
  /* (x, key [4] i32) -> y; iattrs = {site, period, stride}, fattrs = {p}. Inverted dropout with a mask that is a     \
   * pure function of (seed, step, site, element), the same on every backend (kiln/philox.h, docs/DROPOUT.md):        \
   * key = {seed, step, offset_lo, offset_hi} as uint32; element e has the global index                                \
   * g = (e / period) * stride + e % period + offset (uint64, wrapping); r = word g % 4 of                              \
   * Philox4x32-10(counter {g / 4 low, g / 4 high, step, 0}, key {seed, site}); kept iff                               \
   * (r >> 8) >= llround(p * 2^24); y = x * (kept ? (float)(1 / (1 - p)) : 0). y may alias x. */                       \
  X(DROPOUT, 36, "dropout", 2, 1, 3, 1, KILN_E, EXACT, DROPOUT, "x:f key:i", "y:f")                                     \
  /* ---- model families (MPT) */                                                                                      \
  /* (x [..., H, T, T], slopes [H]) -> y: attention with linear biases, queries i x keys j:                            \
   * y[..., h, i, j] = x[..., h, i, j] + bias, bias = slopes[h] * (float)(j - i) rounded to f32 first                  \
   * (no fused multiply-add). Not KILN_E although y[k] reads only x[k] and slopes[h], so y could alias                 \
   * x: KILN_E also admits an op to elementwise fusion (OpenCL), whose kernels index every input at the                \
   * fused element k and know no (h, i, j). Without it the op runs as a kernel of its own and y never                  \
   * aliases x (the scores it biases live in the arena, so nothing is lost). */                                        \
  X(ALIBI, 37, "alibi", 2, 1, 0, 0, 0, ELEMENTWISE, ALIBI, "x:f slopes:F", "y:f")                                      \
  /* (x) -> exact GELU: y = 0.5 x (1 + erf(x / sqrt(2))) (Megatron's default F.gelu, HF MPT's nn.GELU()). */          \
  X(GELU_ERF, 38, "gelu_erf", 1, 1, 0, 0, KILN_E, ELEMENTWISE, SAME, "x:f", "y:f")                                    \
  /* (x, dy) -> dy * GELU_ERF'(x), GELU_ERF'(x) = 0.5 (1 + erf(x / sqrt(2))) + x exp(-x^2 / 2) / sqrt(2 pi). */        \
  X(GELU_ERF_GRAD, 39, "gelu_erf_grad", 2, 1, 0, 0, KILN_E, ELEMENTWISE, SAME, "x:f dy:f", "dx:f")                    \
  /* ---- low precision (issue 16) */                                                                                  \
  /* (x) -> y, x's shape; iattrs = {dtype}: y[k] = x[k] converted to the float dtype (kiln_dtype code) that            \
   * iattrs[0] names, from any float dtype. Narrowing rounds to nearest, ties to even, overflows to inf and keeps      \
   * NaN a NaN; widening is exact, and a cast to x's own dtype keeps every value (a signalling NaN comes out           \
   * quiet); kiln/half.h defines the bits. Not KILN_E: with a wider y, writing y[k] in x's memory would                \
   * overwrite x elements not yet read. */                                                                             \
  X(CAST, 40, "cast", 1, 1, 1, 0, 0, EXACT, CAST, "x:f", "y:t")                                                       \
  /* ---- sequence parallelism (issue 17): host collectives over a group of R ranks (the tensor-parallel one           \
   * for sequence parallelism); iattrs = {dim, R, group}. Rank r's part of a tensor along dim is its r-th of R         \
   * equal slices. */                                                                                                  \
  /* (x) -> y: y along dim is every rank's x in rank order (Megatron's gather from the sequence-parallel region). */   \
  X(ALL_GATHER, 41, "all_gather", 1, 1, 3, 0, KILN_HC, EXACT, GATHER, "x:F", "y:F")                                   \
  /* (x) -> y: this rank's part along dim of the elementwise sum of x over the group (Megatron's reduce-scatter       \
   * to the sequence-parallel region). */                                                                              \
  X(REDUCE_SCATTER, 42, "reduce_scatter", 1, 1, 3, 0, KILN_HC, ELEMENTWISE, SCATTER, "x:F", "y:F")                    \
  /* (x) -> y: this rank's part along dim of x, which every rank holds whole (Megatron's scatter to the               \
   * sequence-parallel region); no communication. */                                                                  \
  X(SCATTER, 43, "scatter", 1, 1, 3, 0, KILN_HC, EXACT, SCATTER, "x:F", "y:F")                                   \
  /* ---- composites (graph/ops/op_def.h's decompose): no plugin need run them, the host expands them into         \
   * the ops above for a backend that does not list them. */                                                         \
  /* (x) -> y = relu(x)^2 = max(x, 0)^2, NaN stays NaN (Megatron's --squared-relu, Primer's activation). */          \
  X(SQUARED_RELU, 44, "squared_relu", 1, 1, 0, 0, KILN_E, ELEMENTWISE, SAME, "x:f", "y:f")                           \
  /* (x, dy) -> dx = 2 max(x, 0) dy; a NaN x gives NaN, as the decomposition's clamp(x, 0, inf) keeps it. */          \
  X(SQUARED_RELU_GRAD, 45, "squared_relu_grad", 2, 1, 0, 0, KILN_E, ELEMENTWISE, SAME, "x:f dy:f", "dx:f")         \
  /* ---- tensor parallelism's copy (issue 31) */                                                                      \
  /* (x) -> y = x: Megatron's copy to the tensor-parallel region. Every rank goes on with the whole x but uses it      \
   * with its shard of the weights only (a column-parallel layer's input, a replicated parameter applied to this       \
   * rank's heads or sequence slice), so x's gradient is the sum of every rank's: y's gradient is all-reduced over     \
   * the group iattrs[0] names (its VJP). No communication forward; the host removes the node before placing a graph's nodes           \
   * (graph/passes.h), so no plugin receives it. */                                                                     \
  X(COPY_TO_TP_REGION, 46, "copy_to_tp_region", 1, 1, 1, 0, KILN_HC, EXACT, SAME, "x:f", "y:f")                   \
  /* ---- math primitives (issue 31): the pieces the activations decompose into (graph/ops/math.cpp). A NaN         \
   * input gives NaN; each is the C library's function of the widened input, rounded once. */                       \
  /* (x) -> e^x. */                                                                                                    \
  X(EXP, 47, "exp", 1, 1, 0, 0, KILN_E, ELEMENTWISE, SAME, "x:f", "y:f")                                              \
  /* (x) -> ln x: -inf at 0, NaN below. */                                                                             \
  X(LOG, 48, "log", 1, 1, 0, 0, KILN_E, ELEMENTWISE, SAME, "x:f", "y:f")                                              \
  /* (x) -> tanh x. */                                                                                                 \
  X(TANH, 49, "tanh", 1, 1, 0, 0, KILN_E, ELEMENTWISE, SAME, "x:f", "y:f")                                            \
  /* (x) -> erf x = 2/sqrt(pi) * integral of e^(-t^2) from 0 to x. */                                                  \
  X(ERF, 50, "erf", 1, 1, 0, 0, KILN_E, ELEMENTWISE, SAME, "x:f", "y:f")                                              \
  /* (a, b) -> max(a, b), b broadcast as a suffix of a: b where a < b, else a (so a tie, -0 against +0 too, gives     \
   * a); NaN if either is NaN (torch.maximum). */                                                                      \
  X(MAXIMUM, 51, "maximum", 2, 1, 0, 0, KILN_E, EXACT, BROADCAST, "a:f b:f", "y:f")                                           \
  /* (a, b, x, y) -> a <= b ? x : y elementwise, all of one shape; a NaN in a or b picks y. A comparison and a         \
   * choice in one op: the IR has no boolean dtype. */                                                                 \
  X(SELECT, 52, "select", 4, 1, 0, 0, KILN_E, EXACT, SAME, "a:f b:f x:f y:f", "z:f")                                \
  /* (x, key [5] i32) -> y; iattrs = {period, stride}, fattrs = {p}. DROPOUT with its site read at run time, as       \
   * the key's fifth word: key = {seed, step, offset_lo, offset_hi, site}, and y is DROPOUT's with that site, bit for \
   * bit. A layer's dropouts then differ only in their key inputs, so identical layers make identical graphs and    \
   * share one compile unit (graph/compile_units.h); DROPOUT, whose site is an attribute, made one per layer. */      \
  X(DROPOUT_KEYED, 53, "dropout_keyed", 2, 1, 2, 1, KILN_E, EXACT, DROPOUT_KEYED, "x:f key:i", "y:f")            \
  /* ---- documents (issue 35) */                                                                                   \
  /* (x [B, ..., T, T], starts [B, T] i32) -> y; fattrs = {scale}. CAUSAL_SOFTMAX within documents: row i of each     \
   * [T, T] matrix of sample b is the softmax of scale * x[i, j] over s <= j <= i, s = starts[b, i] clamped to         \
   * [0, i], and y[i, j] = 0 elsewhere (Megatron's --reset-attention-mask: s is the first position after the last      \
   * EOD before i). With every start 0 it is CAUSAL_SOFTMAX; its gradient is SOFTMAX_GRAD, as masked entries of y      \
   * are 0. The mask is B x T starts, never a [T, T] tensor. */                                                        \
  X(DOCUMENT_SOFTMAX, 54, "document_softmax", 2, 1, 0, 1, 0, GEMM, DOCUMENT_ROWS, "x:f starts:i", "y:f")            \
  /* ---- bf16 main gradients (issue 35) */                                                                         \
  /* (param, grad, m, v, hparams [5], clip [1]) -> (param', m', v'): ADAMW of the gradient                           \
   *   g = round(grad * clip) * grad_scale,                                                                            \
   * the product computed in f32 and rounded once to grad's dtype (any float dtype: for f32 it is the product), as     \
   * Megatron's clip_grad_by_total_norm_fp32 scales bf16 main grads in place before TE's FusedAdam reads them. Its     \
   * kernel reads a bf16/f16 gradient as stored, so no f32 copy of it exists; the rest is ADAMW's math. */             \
  X(ADAMW_CLIP, 55, "adamw_clip", 6, 3, 1, 3, KILN_E | KILN_IP, ELEMENTWISE, ADAMW,                                   \
    "param:F grad:f m:F v:F hparams:F clip:F", "param:F m:F v:F")                                                    \
  /* ---- FP8 (issue 35): every bit of both is kiln/fp8.h's */                                                      \
  /* (x, scale [1]) -> (y, amax [1]); iattrs = {format (kiln_fp8_format: 0 E4M3, 1 E5M2), current (0 or 1)}. A        \
   * per-tensor FP8 cast, Transformer Engine's, in x's own dtype:                                                       \
   *   amax = max |x[k]| (kiln_fp8_amax: a NaN is passed over, as by fmaxf; 0 if every element is NaN),                \
   *   s = current ? kiln_fp8_current_scale(amax, format) : scale[0]   (TE's tensorwise or delayed recipe),            \
   *   y[k] = kiln_fp8_scaled_round(x[k], s, kiln_fp8_div(1, s), format):                                              \
   * the f32 product x * s narrowed to FP8 (to nearest even, saturating), widened, multiplied in f32 by s's            \
   * reciprocal (correctly rounded), then rounded once to y's dtype. A GEMM of two such y is TE's FP8 GEMM computed     \
   * in a wider type. Its VJP passes the gradient straight through; amax feeds the host's amax history. */            \
  X(CAST_FP8, 56, "cast_fp8", 2, 2, 2, 0, 0, EXACT, CAST_FP8, "x:f scale:F", "y:f amax:F")                          \
  /* (x, scale [1]) -> y = x; iattrs as CAST_FP8's. Where a gradient is cast: its VJP is CAST_FP8 of dy with these     \
   * attributes and scale (TE's cast of a linear layer's grad_output, E5M2 under --fp8-format hybrid). A composite     \
   * of one RESHAPE to its own shape, a view, so no backend needs a kernel for it. */                                 \
  X(FP8_GRAD_CAST, 57, "fp8_grad_cast", 2, 1, 2, 0, 0, EXACT, CAST_FP8, "x:f scale:F", "y:f")                      \
  /* ---- fused attention (issue 33) */                                                                             \
  /* (q, k, v [..., T, D]) -> y [..., T, D]; fattrs = {scale}. Causal self-attention of each of the leading dims'     \
   * matrices (a head of a sample): y[i] = sum over j <= i of p[i, j] v[j], p[i] the softmax over j <= i of           \
   * scale * q[i] . k[j]. A composite: MATMUL(q, k^T), CAUSAL_SOFTMAX, MATMUL(p, v) where a backend lists no           \
   * kernel for it; a kernel computes it with an online softmax and never stores p (FlashAttention). */              \
  X(ATTENTION, 58, "attention", 3, 1, 0, 1, 0, GEMM, ATTENTION, "q:f k:f v:f", "y:f")                                \
  /* (q, k, v, dy) -> (dq, dk, dv); fattrs = {scale}. ATTENTION's gradient, p recomputed from q and k:                 \
   *   dv[j] = sum_i p[i, j] dy[i],  ds[i, j] = scale * p[i, j] * (dy[i] . v[j] - sum_j' p[i, j'] dy[i] . v[j']),      \
   *   dq[i] = sum_j ds[i, j] k[j],  dk[j] = sum_i ds[i, j] q[i].                                                      \
   * (The last sum is dy[i] . y[i] in exact arithmetic; computed from p, not from a rounded y.) A composite: the         \
   * chain's own gradient ops (MATMUL, SOFTMAX_GRAD) after recomputing p. */                                          \
  X(ATTENTION_GRAD, 59, "attention_grad", 4, 3, 0, 1, 0, GEMM, ATTENTION, "q:f k:f v:f dy:f", "dq:f dk:f dv:f")        \
  /* (q, k, v [..., T, D], key [5] i32) -> y; iattrs = {period, stride}, fattrs = {scale, p}. ATTENTION with          \
   * DROPOUT_KEYED (key, p, period, stride) on its probabilities, Megatron's attention dropout:                        \
   *   y[i] = sum over j <= i of p[i, j] m[i, j] v[j],                                                                 \
   * m[i, j] DROPOUT_KEYED's factor ((float)(1 / (1 - p)) or 0) at element (matrix * T + i) * T + j of the            \
   * [..., T, T] probabilities, so the mask is the chain's bit for bit. A composite: MATMUL, CAUSAL_SOFTMAX,           \
   * DROPOUT_KEYED, MATMUL where a backend lists no kernel for it; a kernel applies m to each p as it forms it. */    \
  X(ATTENTION_DROPOUT, 60, "attention_dropout", 4, 1, 2, 2, 0, GEMM, ATTENTION_DROPOUT, "q:f k:f v:f key:i", "y:f")   \
  /* (q, k, v, dy, key) -> (dq, dk, dv); attributes as ATTENTION_DROPOUT's. Its gradient, p recomputed:                \
   *   dv[j] = sum_i p[i, j] m[i, j] dy[i],  dp[i, j] = m[i, j] dy[i] . v[j],                                          \
   *   ds[i, j] = scale * p[i, j] * (dp[i, j] - sum_j' p[i, j'] dp[i, j']),  dq, dk as ATTENTION_GRAD's.                \
   * (The last sum is dy[i] . y[i] in exact arithmetic.) A composite: the chain's gradient after recomputing p. */    \
  X(ATTENTION_DROPOUT_GRAD, 61, "attention_dropout_grad", 5, 3, 2, 2, 0, GEMM, ATTENTION_DROPOUT,                      \
    "q:f k:f v:f dy:f key:i", "dq:f dk:f dv:f")
/* clang-format on */

#define KILN_OP_ENUM_ROW_(NAME, CODE, ...) KILN_OP_##NAME = CODE,
typedef enum kiln_op { KILN_OPS(KILN_OP_ENUM_ROW_) KILN_OP_COUNT_ } kiln_op;
#undef KILN_OP_ENUM_ROW_

typedef struct kiln_op_info {
  kiln_op code;
  const char* name;
  int8_t num_inputs; /* KILN_OP_ANY: checked by the shape rule */
  int8_t num_outputs;
  int8_t num_iattrs;
  int8_t num_fattrs;
  uint32_t properties; /* KILN_OPP_* */
  kiln_tolerance tolerance;
  kiln_shape_rule rule;
  const char* inputs; /* signature: "name:dtype ..." (see the top of this file) */
  const char* outputs;
} kiln_op_info;

#ifdef __cplusplus
#define KILN_OPS_CONST_ constexpr
#else
#define KILN_OPS_CONST_ static const
#endif

#define KILN_OP_INFO_ROW_(NAME, CODE, STR, NI, NO, NIA, NFA, PROPS, TOL, RULE, SIG_IN, SIG_OUT) \
  {KILN_OP_##NAME, STR, NI, NO, NIA, NFA, PROPS, KILN_TOL_##TOL, KILN_RULE_##RULE, SIG_IN, SIG_OUT},
KILN_OPS_CONST_ kiln_op_info kiln_op_table[] = {KILN_OPS(KILN_OP_INFO_ROW_)};
#undef KILN_OP_INFO_ROW_
/* The groups' names, by code. */
static const char* const kiln_group_names[] = {"tp", "cp", "ep", "dp", "pp"};
#undef KILN_E
#undef KILN_IP
#undef KILN_HC
#undef KILN_LY

/* One row per code: the enum ends where the table does ... */
#ifdef __cplusplus
static_assert(sizeof(kiln_op_table) / sizeof(kiln_op_table[0]) == KILN_OP_COUNT_, "one table row per op code");
/* ... and row i holds code i (no gap, duplicate or reordering). */
constexpr bool kiln_op_table_in_order_() {
  for (int i = 0; i < KILN_OP_COUNT_; ++i)
    if (static_cast<int>(kiln_op_table[i].code) != i) return false;
  return true;
}
static_assert(kiln_op_table_in_order_(), "kiln_op_table rows must be in code order, codes 0..N-1");
/* ... and each signature names as many tensors as the row counts. */
constexpr int kiln_op_signature_words_(const char* s) {
  int n = 0;
  for (bool in_word = false; *s; ++s) {
    const bool space = *s == ' ';
    if (!space && !in_word) ++n;
    in_word = !space;
  }
  return n;
}
constexpr bool kiln_op_signatures_match_counts_() {
  for (const kiln_op_info& r : kiln_op_table) {
    if (r.num_inputs != KILN_OP_ANY && kiln_op_signature_words_(r.inputs) != r.num_inputs) return false;
    if (r.num_outputs != KILN_OP_ANY && kiln_op_signature_words_(r.outputs) != r.num_outputs) return false;
  }
  return true;
}
static_assert(kiln_op_signatures_match_counts_(), "a kiln_op_table signature disagrees with its counts");
/* ... and every host collective has an int attribute to name its group. */
constexpr bool kiln_op_collectives_name_a_group_() {
  for (const kiln_op_info& r : kiln_op_table)
    if ((r.properties & KILN_OPP_HOST_COLLECTIVE) != 0 && r.num_iattrs < 1) return false;
  return true;
}
static_assert(kiln_op_collectives_name_a_group_(), "a host collective's last int attribute is its kiln_group");
static_assert(sizeof(kiln_group_names) / sizeof(kiln_group_names[0]) == KILN_GROUP_COUNT_, "one name per group");
#else
_Static_assert(sizeof(kiln_op_table) / sizeof(kiln_op_table[0]) == KILN_OP_COUNT_, "one table row per op code");
_Static_assert(sizeof(kiln_group_names) / sizeof(kiln_group_names[0]) == KILN_GROUP_COUNT_, "one name per group");
#endif

/* The row of a code, or NULL for a code this header does not know (a newer
 * host's op reaching an older plugin). */
static inline const kiln_op_info* kiln_op_find(int code) {
  return code >= 0 && code < (int)KILN_OP_COUNT_ ? &kiln_op_table[code] : (const kiln_op_info*)0;
}

static inline const char* kiln_op_name(int code) {
  const kiln_op_info* info = kiln_op_find(code);
  return info ? info->name : "unknown";
}

/* A group's name ("tp", ...), or NULL for a code this header does not know. */
static inline const char* kiln_group_name(int64_t group) {
  return group >= 0 && group < (int64_t)KILN_GROUP_COUNT_ ? kiln_group_names[group] : (const char*)0;
}

static inline int kiln_op_has(int code, uint32_t property) {
  const kiln_op_info* info = kiln_op_find(code);
  return info != 0 && (info->properties & property) != 0;
}

#endif /* KILN_OPS_H */
