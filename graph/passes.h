// Host passes over a graph before it is planned and lowered.
#pragma once

#include "graph/graph.h"

namespace kiln::graph {

// Removes nodes none of whose outputs reach a graph output. Ports are kept
// (an unused input still gets a slot, so callers can bind it uniformly).
Graph eliminate_dead_code(const Graph& g);

// Removes every COPY_TO_TP_REGION node: forward it is the identity, so its
// readers take its input instead. Throws kiln::Error if an output port
// names a copy. Autodiff has used
// it already (its VJP is the gradient's all-reduce); left in place, each
// would cut the graph into one more compiled piece for nothing.
Graph remove_tp_copies(const Graph& g);

// The 16-bit copies of f32 main parameters (a CAST of a graph input) cost a
// conversion to make and a tensor to keep, so they are made when needed
// rather than kept: each such CAST moves to just before its first reader,
// and one more copy is made just before its first reader at or after node
// `backward_begin`, which then reads that copy. A copy thus lives through
// its forward readers and, separately, through its backward ones, instead
// of from the top of the step to the end of the backward. Values are
// bitwise the same (CAST is deterministic); only liveness changes.
Graph rematerialize_input_casts(const Graph& g, size_t backward_begin);

// Moves each node from index `begin` on to just after the last node that
// makes one of its inputs, in that node's compile unit (a node reading only
// graph inputs stays at the end). The train step's gradient sums then run
// inside the backward unit of their layer, so a layer's gradients are final
// when its backward piece ends (--overlap-grad-reduce starts their
// all-reduce there), and each gradient contribution dies at once. Values are
// bitwise the same; only the order and liveness change.
Graph place_after_producers(const Graph& g, size_t begin);

}  // namespace kiln::graph
