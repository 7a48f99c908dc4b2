// The loop sizes every plugin's kernels are specialised to, derived once from
// a graph that kiln::ir::check_graph (kiln/op_rules.hpp) accepted, by each
// op's shape-rule kind: an op added with an existing rule kind needs nothing
// here. Shared by the cpu, OpenCL and Vulkan plugins.
#pragma once

#include <cstdint>
#include <vector>

#include "kiln/ir.h"
#include "kiln/ir_decode.hpp"

#pragma GCC visibility push(hidden)

namespace kiln::backend {

// PERMUTE after dropping size-1 dims and merging dims that stay adjacent:
// output dim i has size out_dims[i] and input stride in_strides[i].
struct PermutePlan {
  int rank = 0;
  int64_t out_dims[KILN_IR_MAX_RANK] = {};
  int64_t in_strides[KILN_IR_MAX_RANK] = {};
};

struct NodeInfo {
  kiln_op op = KILN_OP_FILL;
  // Meaning per op:
  //   elementwise, RESHAPE, PERMUTE, SUM_SQUARES:  count (elements)
  //   ADD, MUL:                                    count, bcast (= numel(b))
  //   MATMUL:                                      batch, m, n, k, trans_a, trans_b
  //   EMBEDDING(_GRAD):                            rows (ids), cols (C), vocab
  //   LAYERNORM(_GRAD), SOFTMAX_GRAD,
  //   CROSS_ENTROPY(_GRAD), SUM_TO:                rows, cols
  //   CAUSAL_SOFTMAX:                              rows (= batch * T), cols (T)
  //   DOCUMENT_SOFTMAX:                            rows, cols (T), batch (samples: rows / batch a sample)
  //   SPLIT:                                       rows (outer), parts, inner (per part)
  //   CONCAT:                                      rows (outer), inners (per input), inner (output)
  //   ROPE(_GRAD):                                 rows, cols (D), positions (T), pairs (R), interleaved
  //   DROPOUT:                                     count, site, period, stride
  //   DROPOUT_KEYED:                               count, period, stride (site -1: key word 4)
  //   ALIBI:                                       count, rows (= batch * H * T), cols (T), heads (H)
  //   CAST:                                        count
  //   CAST_FP8, FP8_GRAD_CAST:                     count, fp8_format, fp8_current
  //   ADAMW, ADAMW_CLIP:                           count, weight_decay, grad_dtype (input 1's)
  // Every node: x_dtype, y_dtype (its first input's and first output's, f32
  // where it has none), so a kernel knows what its storage holds.
  int64_t count = 0, bcast = 0, rows = 0, cols = 0, batch = 0, m = 0, n = 0, k = 0, vocab = 0;
  int64_t parts = 0, inner = 0;
  int64_t site = 0, period = 0, stride = 0;
  int64_t heads = 0;
  bool trans_a = false, trans_b = false, weight_decay = false;
  std::vector<int64_t> inners;
  PermutePlan permute;
  int64_t positions = 0, pairs = 0;
  bool interleaved = false;
  kiln_dtype x_dtype = KILN_F32, y_dtype = KILN_F32;
  kiln_dtype grad_dtype = KILN_F32;
  int64_t fp8_format = 0;  // kiln_fp8_format
  bool fp8_current = false;
};

// The sizes of every node of `g`, which check_graph must have accepted (no
// check is repeated here).
std::vector<NodeInfo> node_sizes(const ir::DecodedGraph& g);

}  // namespace kiln::backend

#pragma GCC visibility pop
