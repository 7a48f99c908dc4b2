// How attention.comp covers the [T, D] matrices of one ATTENTION or
// ATTENTION_GRAD node on a device, or why it cannot: asked by the lowering
// (which dispatches the plan) and by op_supported_node (which refuses such
// a node, so the host runs the op's decomposition, the unfused chain,
// instead of a compile that fails).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "device.h"

#pragma GCC visibility push(hidden)

namespace kiln::vk {

struct AttentionPlan {
  uint32_t E = 1;   // elements of a row per invocation: the largest divisor of D up to 16
  uint32_t S = 1;   // invocations per row, D / E
  uint32_t QB = 1;  // rows per workgroup, about 128 invocations in all
  uint32_t BK = 1;  // rows per shared tile of k and v (or q and dy)
};

// nullopt, with `why` (one line), when no plan fits: one matrix wider than
// a binding window, a row split wider than a workgroup, the tiles and
// partial sums larger than the shared memory, or, on llvmpipe, more loop
// iterations per invocation than its limit.
// `dropout`: for ATTENTION_DROPOUT and its gradient, whose keep factors
// take shared memory and loop iterations of their own.
std::optional<AttentionPlan> plan_attention(const DeviceInfo& d, uint64_t T, uint64_t D, bool dropout,
                                            std::string* why);

}  // namespace kiln::vk

#pragma GCC visibility pop
