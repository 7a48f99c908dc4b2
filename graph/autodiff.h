// Reverse-mode automatic differentiation over the graph IR.
//
// backward() appends to `g` the nodes that compute d(loss)/d(x) for each x
// in `wrt`, using one vector-Jacobian rule per forward op (graph/ops/, found
// through the op registry).
// Models never write backward passes by hand.
#pragma once

#include <vector>

#include "graph/graph.h"
#include "graph/recompute.h"

namespace kiln::graph {

// `loss` must be an f32 value of shape [1]. The seed gradient is 1. Returns,
// for each entry of `wrt`, the value holding its gradient (same shape). A
// value the loss does not depend on (or an i32 value) gets a zero of its
// shape. Throws kiln::Error if the loss path goes through ADAMW or a *_GRAD
// op (no second derivatives), or if CONCAT of unequal parts would need more
// than 255 chunks to express its gradient.
//
// `recompute`: forward node ranges whose values the backward recomputes
// instead of keeping (graph/recompute.h); the gradients are bitwise the same.
// Tensor parallelism needs nothing here: a value whose gradient is summed
// over the group passes through COPY_TO_TP_REGION, whose VJP is that sum.
std::vector<ValueId> backward(Graph& g, ValueId loss, const std::vector<ValueId>& wrt,
                              const std::vector<RecomputeSegment>& recompute = {});

}  // namespace kiln::graph
