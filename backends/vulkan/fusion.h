// Elementwise chains the Vulkan backend runs as one dispatch of fused.comp
// (issue 33, item 3), as the OpenCL backend fuses its elementwise kernels:
// consecutive elementwise nodes where each reads the result of the one
// before. An intermediate nothing else reads is never stored or loaded; one
// that a port or another node needs is stored as the unfused node would, but
// not loaded again. The chain costs one dispatch instead of up to four.
#pragma once

#include <cstdint>
#include <vector>

#include "ir_check.h"

#pragma GCC visibility push(hidden)

namespace kiln::vk {

struct ElementwiseChain {
  static constexpr size_t kMaxStages = 4;    // fused.comp's OP0..OP3
  static constexpr size_t kMaxBindings = 7;  // bindings 1..7 (0 is the last stage's output)
  std::vector<uint32_t> nodes;               // consecutive node indices, one per stage
  // Values bound at 1..: values[0] is the chain's input; the stages' second
  // operands, and the intermediates stored because something else reads
  // them (a port, or another node), in stage order.
  std::vector<uint32_t> values;
  std::vector<bool> written;       // per entry of values: an intermediate the chain stores
  std::vector<int> b_binding;      // per stage: the binding of its second operand, 0 if none
  std::vector<int> store_binding;  // per stage but the last: the binding its result is stored in, 0 if none
};

// The chains of `g` whose every operand fits a window of `window_bytes`;
// a node in none is lowered on its own. Chains of one node are not listed.
std::vector<ElementwiseChain> elementwise_chains(const ir::DecodedGraph& g, const std::vector<backend::NodeInfo>& info,
                                                 uint64_t window_bytes);

}  // namespace kiln::vk

#pragma GCC visibility pop
