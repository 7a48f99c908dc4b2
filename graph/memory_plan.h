// Liveness-based memory planning and the slot assignment the IR carries.
//
// Slot 0 is one arena per graph; every intermediate value gets an offset in
// it, reused once the value is dead (greedy best-fit by size). Each named
// port gets its own slot >= 1, except an output that `updates` an input,
// which shares that input's slot (in-place update).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace kiln::graph {

struct MemoryPlan {
  uint64_t arena_bytes = 0;
  std::vector<uint32_t> slot;    // per ValueId
  std::vector<uint64_t> offset;  // per ValueId
  // slot_ports[k] = port name bound to slot k (index 0 is the arena, "").
  std::vector<std::string> slot_ports;
  std::vector<uint64_t> slot_bytes;
};

MemoryPlan plan_memory(const Graph& g);

}  // namespace kiln::graph
