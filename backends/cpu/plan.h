// What the CPU backend knows about a graph before it runs: every node checked
// against its op's shape rule (kiln/op_rules.hpp) and reduced to the few sizes its
// kernel loops over. Built once at compile (for validation) and again at
// load; execute only binds addresses.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kiln/ir.h"
#include "kiln/ir_decode.hpp"
#include "kiln/plugin.h"

// Internal to the plugin: keep these out of its dynamic symbol table.
#pragma GCC visibility push(hidden)

namespace kiln::cpu {

// PERMUTE after dropping size-1 dims and merging dims that stay adjacent:
// output dim i is input dim perm[i]; strides are in elements.
struct PermutePlan {
  int rank = 0;
  int64_t out_dims[KILN_IR_MAX_RANK] = {};
  int64_t in_strides[KILN_IR_MAX_RANK] = {};  // input stride of output dim i
};

struct NodePlan {
  kiln_op op = KILN_OP_FILL;
  std::vector<uint32_t> in, out;  // value ids
  std::vector<float> fattrs;

  // Sizes, meaning per op:
  //   elementwise, RESHAPE, SUM_SQUARES:    n
  //   ADD, MUL:                             n, inner (= numel(b))
  //   MATMUL:                               batch, m, cols (= N), k, trans_a, trans_b
  //   EMBEDDING(_GRAD):                     rows (ids), cols (C), vocab
  //   LAYERNORM(_GRAD), SOFTMAX_GRAD,
  //   CROSS_ENTROPY(_GRAD), SUM_TO,
  //   ROW_MAX, CROSS_ENTROPY_SHARD(_GRAD):  rows, cols (last dim / suffix size)
  //   CROSS_ENTROPY_FROM_SUMS(_GRAD):       rows
  //   CAUSAL_SOFTMAX:                       batch (matrices), cols (T)
  //   SPLIT:                                rows (outer), parts, inner (per part)
  //   CONCAT:                               rows (outer), inners (per input), inner (output)
  int64_t n = 0, inner = 0, rows = 0, cols = 0, batch = 0, m = 0, k = 0, vocab = 0, parts = 0;
  bool trans_a = false, trans_b = false, flag = false;  // flag: ADAMW apply_weight_decay
  std::vector<int64_t> inners;
  PermutePlan permute;

  // Bytes of device scratch the kernel needs with `threads` threads.
  uint64_t scratch_bytes(int threads) const;
};

struct PlanError {
  int32_t code = KILN_OK;
  std::string message;
  explicit operator bool() const { return code != KILN_OK; }
};

// Checks the graph with the shared op rules (ir::check_graph: arity, dtypes,
// shapes, attributes) and plans every node. The caller has already refused
// ops outside the plugin's support list.
PlanError plan_graph(const ir::DecodedGraph& g, std::vector<NodePlan>* plans);

const char* op_name(kiln_op op);

}  // namespace kiln::cpu

#pragma GCC visibility pop
