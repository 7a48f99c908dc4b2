// What the compile cache records about a graph besides its IR, so a miss
// can be explained: a shape-independent structure hash (ops in order and
// port names) and every port's shape.
#pragma once

#include <nlohmann/json.hpp>

#include "graph/graph.h"

namespace kiln::graph {

// {"structure": sha256, "nodes": N, "ports": {"<name>": [dims...], ...}}
nlohmann::json graph_summary(const Graph& graph);

}  // namespace kiln::graph
