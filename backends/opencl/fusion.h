// Elementwise fusion: runs of consecutive elementwise nodes over the same
// number of elements become one kernel. Values made and used only inside a
// run stay in registers; the rest are stored once, at the end of the work
// item, after every load (so in-place updates read before they write).
#pragma once

#include <cstdint>
#include <vector>

#include "lower.h"

#pragma GCC visibility push(hidden)

namespace kiln::ocl {

struct Unit {
  std::vector<uint32_t> nodes;  // consecutive in the graph's order
  bool elementwise = false;     // a fused elementwise kernel (maybe of one node)
};

struct Fusion {
  std::vector<Unit> units;
  // Per value: written to memory by its unit. False only for values that
  // live and die inside one fused kernel.
  std::vector<bool> stored;
};

Fusion fuse(const ir::DecodedGraph& g, const std::vector<NodeInfo>& info);

// The ops a fused kernel can hold.
bool is_fusible(const ir::DecodedGraph& g, const ir::DecodedNode& n);

// Whether input `input` of `n` is read at the kernel's own index (true) or
// broadcast (a suffix operand, or AdamW's hyper-parameters).
bool reads_at_index(const ir::DecodedNode& n, const NodeInfo& info, size_t input);

}  // namespace kiln::ocl

#pragma GCC visibility pop
