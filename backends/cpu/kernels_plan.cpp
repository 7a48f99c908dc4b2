// Validation and planning of decoded graphs (baseline build only; it runs
// once per compile/load, never per step). Validation is the op rules every
// host and plugin share (kiln/op_rules.hpp), so a malformed graph is refused
// at compile with a message naming the node, instead of reading out of
// bounds at execute; planning then trusts the shapes.
#include <algorithm>
#include <string>
#include <vector>

#include "gemm.h"
#include "kiln/op_rules.hpp"
#include "plan.h"

namespace kiln::cpu {

const char* op_name(kiln_op op) { return kiln_op_name(op); }

// By shape-rule kind, like the plan itself: an op added with an existing
// rule gets its scratch without an edit here.
uint64_t NodePlan::kernel_scratch_bytes(int threads) const {
  const auto t = static_cast<uint64_t>(threads < 1 ? 1 : threads);
  const kiln_op_info* info = kiln_op_find(op);
  if (info == nullptr) return 0;
  // Ops that read bf16/f16 rows themselves: each worker's f32 rows.
  if (x_dtype != KILN_F32 && (op == KILN_OP_CAUSAL_SOFTMAX || op == KILN_OP_DOCUMENT_SOFTMAX))
    return t * 2 * static_cast<uint64_t>(cols) * sizeof(float);
  if (x_dtype != KILN_F32 && op == KILN_OP_SOFTMAX_GRAD) return t * 3 * static_cast<uint64_t>(cols) * sizeof(float);
  if (x_dtype != KILN_F32 && op == KILN_OP_EMBEDDING_GRAD)
    return embedding16_order_bytes(rows) + t * 2 * static_cast<uint64_t>(cols) * sizeof(float);
  if (y_dtype != KILN_F32 && converts_elementwise(op))  // y_dtype: FILL has no input
    return t * (in.size() + 1) * static_cast<uint64_t>(kElementwise16Block) * sizeof(float);
  switch (info->rule) {
    // Per-thread partial column sums, one row of them per parameter gradient.
    case KILN_RULE_NORM_GRAD:
      return t * static_cast<uint64_t>(info->num_outputs - 1) * static_cast<uint64_t>(cols) * sizeof(float);
    case KILN_RULE_SUM_TO_SUFFIX: return t * static_cast<uint64_t>(cols) * sizeof(float);
    case KILN_RULE_LOSS:  // 16-bit logits: each worker's f32 row after the per-row losses
      return static_cast<uint64_t>(rows) * sizeof(double) +
             (x_dtype == KILN_F32 ? 0 : t * static_cast<uint64_t>(cols) * sizeof(float));
    case KILN_RULE_LOSS_GRAD:  // 16-bit logits: each worker's f32 logits row and gradient row
      return x_dtype == KILN_F32 ? 0 : t * 2 * static_cast<uint64_t>(cols) * sizeof(float);
    case KILN_RULE_SUMS_LOSS: return static_cast<uint64_t>(rows) * sizeof(double);
    case KILN_RULE_TO_SCALAR: return t * sizeof(double);
    case KILN_RULE_CAST_FP8:
      return t * sizeof(float);  // each worker's amax
    // 16-bit GEMM: each worker's f32 block of C (gemm.h).
    case KILN_RULE_MATMUL:
      return x_dtype == KILN_F32 ? 0 : t * static_cast<uint64_t>(gemm_16bit_tile_floats(m, n)) * sizeof(float);
    default: return 0;
  }
}

PlanError plan_graph(const ir::DecodedGraph& g, std::vector<NodePlan>* plans) {
  const std::string err = ir::check_graph(g);
  if (!err.empty()) return {KILN_ERR_INVALID_ARGUMENT, err};
  const std::vector<backend::NodeInfo> sizes = backend::node_sizes(g);
  plans->assign(g.nodes.size(), {});
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    NodePlan& p = (*plans)[i];
    static_cast<backend::NodeInfo&>(p) = sizes[i];
    p.in = g.nodes[i].inputs;
    p.out = g.nodes[i].outputs;
    p.fattrs = g.nodes[i].fattrs;
    p.staging = plan_staging(g, g.nodes[i]);
  }
  return {};
}

}  // namespace kiln::cpu
