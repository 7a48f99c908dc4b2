// What a VJP rule (graph/ops/*.cpp) sees, and the helpers rules share. The
// reverse-mode walk that calls the rules is graph/autodiff.cpp.
#pragma once

#include <string>
#include <vector>

#include "core/error.h"
#include "graph/graph.h"
#include "graph/ops/op_def.h"

namespace kiln::graph {

// The gradient of a value the loss does not depend on.
constexpr ValueId kNoGradient = -1;

// The node (a copy -- appending nodes may move the graph's storage), the
// gradient of each output (kNoGradient if the loss does not depend on that
// output), and which inputs need a gradient.
struct VjpArgs {
  const Node& node;
  const std::vector<ValueId>& dy;
  const std::vector<bool>& need;

  ValueId in(size_t i) const { return node.inputs.at(i); }
  ValueId out(size_t i) const { return node.outputs.at(i); }
};

[[noreturn]] inline void autodiff_fail(const std::string& why) { throw Error("autodiff: " + why); }

// No gradient for any input yet.
inline Grads none_for(const VjpArgs& a) { return Grads(a.node.inputs.size(), kNoGradient); }

// Sums a gradient of `dy`'s shape down to `shape`, a suffix of it: the
// adjoint of suffix broadcasting.
inline ValueId reduce_to(Graph& g, ValueId dy, const Shape& shape) {
  if (g.shape(dy) == shape) return dy;
  return g.sum_to(dy, shape);
}

}  // namespace kiln::graph
