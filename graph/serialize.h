// Canonical serialization of a planned graph into the bytes of kiln/ir.h,
// and the stable hash of those bytes. Values are renumbered in order of
// first appearance and names are left out, so two processes (or two
// identical layers) building the same computation get the same bytes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/memory_plan.h"

namespace kiln::graph {

std::vector<uint8_t> serialize(const Graph& g, const MemoryPlan& plan);

// Hex SHA-256 of the canonical bytes.
std::string graph_hash(const Graph& g);

}  // namespace kiln::graph
