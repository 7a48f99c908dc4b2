// How codegen_attention.cpp's kernels cover the [T, D] matrices of one
// ATTENTION(_DROPOUT) or its gradient node on a device, or why they cannot: asked
// by the generator (which sizes its kernels by the plan) and by
// op_supported_node (which refuses such a node, so the host runs the op's
// decomposition, the unfused chain, instead of a compile that fails).
// Vulkan's attention_plan.h answers the same question for attention.comp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "codegen.h"

#pragma GCC visibility push(hidden)

namespace kiln::ocl {

struct AttentionPlan {
  uint64_t E = 1;       // elements of a row per work item: the largest divisor of D up to 16
  uint64_t S = 1;       // work items per row, D / E
  uint64_t QB = 1;      // rows per work group, about 128 work items in all
  uint64_t BK = 1;      // rows per local tile of k and v (or q and dy)
  uint64_t blocks = 1;  // work groups per matrix
  uint64_t group() const { return QB * S; }
};

// nullopt, with `why` (one line), when the row split needs a larger work
// group than the device allows or the tiles and partial sums (with
// `dropout`, ATTENTION_DROPOUT(_GRAD), also a keep factor per row and tile
// row) more local memory than it has. T and D are at least 1.
std::optional<AttentionPlan> plan_attention(const Target& t, uint64_t T, uint64_t D, bool dropout, std::string* why);

}  // namespace kiln::ocl

#pragma GCC visibility pop
