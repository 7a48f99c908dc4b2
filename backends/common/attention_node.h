// The attention ops (ATTENTION, ATTENTION_GRAD and their dropout twins,
// known by their shape rules in kiln/ops.h) are the only ops whose GPU
// kernels refuse some shapes: a head size whose row split needs a larger
// workgroup, or more shared memory, than a device has (each plugin's
// attention_plan.h). A plugin's op_supported_node asks its plan about such
// a node through this, so the node's reading is written once; a refused
// node runs as its decomposition, the unfused chain.
#pragma once

#include <cstdint>
#include <vector>

#include "kiln/ops.h"
#include "kiln/plugin_kit.hpp"

#pragma GCC visibility push(hidden)

namespace kiln::backend {

// What an attention kernel's plan depends on.
struct AttentionNode {
  uint64_t T = 0, D = 0;  // queries (= keys) per matrix, head size
  bool dropout = false;   // a dropout twin: the plan also holds a row's keep factors
};

// True for an op that is not an attention op, and for one with nothing to
// compute (T or D zero: no kernel runs); false for q with fewer than 2
// dims (check_graph refuses such a graph anyway); otherwise fits(node).
template <class Fits>
bool attention_node_supported(int32_t op, const std::vector<plugin_kit::NodeTensor>& inputs, Fits fits) {
  const kiln_op_info* info = kiln_op_find(op);
  if (info == nullptr || (info->rule != KILN_RULE_ATTENTION && info->rule != KILN_RULE_ATTENTION_DROPOUT)) return true;
  if (inputs.empty() || inputs[0].dims.size() < 2) return false;
  const std::vector<int64_t>& dims = inputs[0].dims;  // q: [..., T, D]
  const int64_t T = dims[dims.size() - 2], D = dims.back();
  if (T <= 0 || D <= 0) return true;
  return fits(
      AttentionNode{static_cast<uint64_t>(T), static_cast<uint64_t>(D), info->rule == KILN_RULE_ATTENTION_DROPOUT});
}

}  // namespace kiln::backend

#pragma GCC visibility pop
