// Expanding composite ops (an OpDef with a decompose function) into the ops
// they are made of, for a backend that has no kernel of its own for them.
//
// The executor runs this before it places nodes on devices, so a backend
// that lacks a composite runs its pieces itself and only primitives it lacks
// too ever fall back to the cpu. A backend that lists a composite (a fused
// kernel, kept as an optimisation) gets the node unchanged.
#pragma once

#include <functional>

#include "graph/graph.h"

namespace kiln::graph {

// Whether the device that will run `g` takes node `n` as it is.
using KeepNode = std::function<bool(const Graph& g, const Node& n)>;

// `g` with every composite node that `keep` refuses replaced, in place in
// the node order and in the node's compile unit, by its decomposition, and
// those expanded again until none is left that `keep` refuses (a composite
// may be built from composites). The composite's output values keep their
// ids, so ports and readers need no rewiring. A graph with nothing to
// expand comes back equal to `g`, node for node.
Graph expand_composites(const Graph& g, const KeepNode& keep);

// Whether `keep` accepts every node of composite `n`'s decomposition, with
// the composites in it that `keep` refuses expanded again: whether a device
// that refuses `n` itself would run all of its pieces. Where not, and the
// fallback lists `n`, the executor sends it there whole, to a fused kernel:
// pieces split between two devices only add boundaries.
bool runs_all_pieces(const Graph& g, const Node& n, const KeepNode& keep);

// Whether `n` is a composite (its op has a decomposition).
bool is_composite(kiln_op op);

}  // namespace kiln::graph
