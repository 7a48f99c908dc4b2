/*
 * kiln graph IR: op codes and the serialized form plugins receive.
 *
 * Pure C (C11). The host builds graphs in C++ (graph/), serializes them to
 * the canonical byte form below, hashes those bytes for the compile cache,
 * and hands them to a plugin's `compile`. A plugin may decode the bytes with
 * the header-only helper in `kiln/ir_decode.hpp` or with its own reader.
 *
 * Op codes and attribute meanings are append-only: a code is never reused.
 *
 * ---------------------------------------------------------------- format
 * All integers little-endian, no padding, no pointers, no names.
 *
 *   header:
 *     char     magic[8]       "KILNIR\0\0"
 *     u32      version        KILN_IR_VERSION
 *     u32      num_slots      buffer slots the graph addresses (>= 1)
 *     u64      arena_bytes    size of slot 0, the workspace arena
 *     u32      num_values
 *     u32      num_nodes
 *   values[num_values]:
 *     u8       dtype          kiln_dtype
 *     u8       rank           0..KILN_IR_MAX_RANK
 *     u16      reserved       0
 *     u32      slot           buffer slot holding the value
 *     u64      offset         byte offset into that slot's buffer
 *     i64      dims[rank]
 *   nodes[num_nodes]          in a valid execution (topological) order
 *     u16      op             kiln_op
 *     u8       num_inputs
 *     u8       num_outputs
 *     u8       num_iattrs
 *     u8       num_fattrs
 *     u16      reserved       0
 *     u32      inputs[num_inputs]     value ids
 *     u32      outputs[num_outputs]   value ids
 *     i64      iattrs[num_iattrs]
 *     f32      fattrs[num_fattrs]
 *
 * Values that no node produces are graph inputs. Every tensor is dense,
 * row-major, and starts at (slot, offset); offsets are 64-byte aligned.
 * An output may share a slot with an input (in-place update, e.g. AdamW);
 * the host guarantees no node reads the old contents after it is written.
 * Elementwise ops (FILL, ADD, MUL, SCALE, GELU, GELU_GRAD, ADAMW) must give
 * the right answer when an output occupies the same memory as an input,
 * i.e. read element k of every input before writing element k.
 * Broadcasting rule for binary elementwise ops: the second operand's shape
 * must equal a suffix of the first's (e.g. a bias [C] over [N, C]).
 */
#ifndef KILN_IR_H
#define KILN_IR_H

#include <stdint.h>

#define KILN_IR_VERSION 1
#define KILN_IR_MAX_RANK 6
#define KILN_IR_ALIGN 64

typedef enum kiln_dtype { KILN_F32 = 0, KILN_I32 = 1 } kiln_dtype;

/* For each op: inputs -> outputs; iattrs; fattrs. */
typedef enum kiln_op {
  /* () -> y: every element = fattrs[0]. */
  KILN_OP_FILL = 0,
  /* (a, b) -> a + b, b broadcast as a suffix of a. */
  KILN_OP_ADD = 1,
  /* (a, b) -> a * b, b broadcast as a suffix of a. */
  KILN_OP_MUL = 2,
  /* (x) -> x * fattrs[0]. */
  KILN_OP_SCALE = 3,
  /* (x) -> GELU with the tanh approximation. */
  KILN_OP_GELU = 4,
  /* (x, dy) -> dy * GELU'(x). */
  KILN_OP_GELU_GRAD = 5,
  /* (a, b) -> op(a) @ op(b); iattrs = {trans_a, trans_b}. Equal rank >= 2,
   * equal leading (batch) dims; a [.., M, K] (or [.., K, M] if trans_a),
   * b [.., K, N] (or [.., N, K] if trans_b); y [.., M, N]. */
  KILN_OP_MATMUL = 6,
  /* (table [V, C] f32, ids [...] i32) -> y [..., C]: y[i] = table[ids[i]]. */
  KILN_OP_EMBEDDING = 7,
  /* (dy [..., C], ids [...] i32) -> dtable [V, C]; iattrs = {V}.
   * Scatter-add of dy rows into row ids[i]; rows never indexed are 0. */
  KILN_OP_EMBEDDING_GRAD = 8,
  /* (x [..., C], gamma [C], beta [C]) -> y; fattrs = {eps}.
   * Normalizes over the last dim with biased variance. */
  KILN_OP_LAYERNORM = 9,
  /* (x, gamma, dy) -> (dx, dgamma, dbeta); fattrs = {eps}. */
  KILN_OP_LAYERNORM_GRAD = 10,
  /* (x [..., T, T]) -> y; fattrs = {scale}. Row i: softmax over j <= i of
   * scale * x[i, j]; y[i, j] = 0 for j > i. */
  KILN_OP_CAUSAL_SOFTMAX = 11,
  /* (y, dy) -> dx; fattrs = {scale}. dx = scale * y * (dy - sum_j dy*y), the
   * sum over the whole row (masked entries add 0 since y is 0 there). */
  KILN_OP_SOFTMAX_GRAD = 12,
  /* (logits [N, V], targets [N] i32) -> loss [1]: mean over N of
   * -log softmax(logits)[target]. */
  KILN_OP_CROSS_ENTROPY = 13,
  /* (logits, targets, dloss [1]) -> dlogits [N, V]. */
  KILN_OP_CROSS_ENTROPY_GRAD = 14,
  /* (x [..., S]) -> y [S]: sum over all leading dims. The output shape is
   * a non-empty suffix S of the input shape. */
  KILN_OP_SUM_TO = 15,
  /* (x) -> y with the output's shape and the same element count. */
  KILN_OP_RESHAPE = 16,
  /* (x) -> y; iattrs = perm: y.dims[i] = x.dims[perm[i]]. */
  KILN_OP_PERMUTE = 17,
  /* (x) -> (y_0 .. y_{n-1}); iattrs = {axis, n}: n equal parts along axis. */
  KILN_OP_SPLIT = 18,
  /* (x_0 .. x_{n-1}) -> y; iattrs = {axis}: concatenation along axis. */
  KILN_OP_CONCAT = 19,
  /* (x) -> y [1] = sum of x^2. */
  KILN_OP_SUM_SQUARES = 20,
  /* (param, grad, m, v, hparams [5]) -> (param', m', v').
   * hparams = {lr, weight_decay, 1/(1-beta1^t), 1/(1-beta2^t), grad_scale};
   * fattrs = {beta1, beta2, eps}; iattrs = {apply_weight_decay}.
   *   g  = grad * grad_scale
   *   m' = beta1 m + (1-beta1) g;  v' = beta2 v + (1-beta2) g^2
   *   p' = p - lr * (m' c1 / (sqrt(v' c2) + eps) + wd * p)   (wd if applied)
   * Decoupled weight decay as in PyTorch's AdamW. */
  KILN_OP_ADAMW = 21,
  /* ---- tensor parallelism (IR 1, appended; a plugin built against an
   * older header reports them unsupported and the host falls back). */
  /* (x) -> y, same shape: the elementwise sum (iattrs[0] = 0) or max
   * (iattrs[0] = 1) of x over the ranks of the tensor-parallel group. A
   * collective: the host runs it through MPI between the compiled pieces
   * of a graph, so a plugin's compile never receives it. */
  KILN_OP_ALL_REDUCE = 22,
  /* (x [..., V]) -> y [...]: the maximum over the last dim (rank >= 2); a
   * row holding a NaN gives NaN. */
  KILN_OP_ROW_MAX = 23,
  /* Vocab-parallel cross-entropy, part 1, over one shard of the vocab:
   * (logits [N, V], targets [N] i32, rowmax [N]) -> sums [N, 2] with
   *   sums[i][0] = sum_j exp(logits[i][j] - rowmax[i])
   *   sums[i][1] = logits[i][t] - rowmax[i] if 0 <= t = targets[i] < V, else 0
   * (targets index the shard; ids of other shards lie outside [0, V)). */
  KILN_OP_CROSS_ENTROPY_SHARD = 24,
  /* (logits, targets, rowmax, dsums [N, 2]) -> dlogits [N, V]:
   *   dlogits[i][j] = dsums[i][0] exp(logits[i][j] - rowmax[i]) + (j == t ? dsums[i][1] : 0). */
  KILN_OP_CROSS_ENTROPY_SHARD_GRAD = 25,
  /* Part 2, on the group-summed sums: (sums [N, 2]) -> loss [1] =
   * mean over N of log(sums[i][0]) - sums[i][1]. */
  KILN_OP_CROSS_ENTROPY_FROM_SUMS = 26,
  /* (sums, dloss [1]) -> dsums [N, 2] = {dloss / (N sums[i][0]), -dloss / N}. */
  KILN_OP_CROSS_ENTROPY_FROM_SUMS_GRAD = 27,
  KILN_OP_COUNT_ = 28
} kiln_op;

#endif /* KILN_IR_H */
