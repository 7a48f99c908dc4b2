// Host passes over a graph before it is planned and lowered.
#pragma once

#include "graph/graph.h"

namespace kiln::graph {

// Removes nodes none of whose outputs reach a graph output. Ports are kept
// (an unused input still gets a slot, so callers can bind it uniformly).
Graph eliminate_dead_code(const Graph& g);

}  // namespace kiln::graph
