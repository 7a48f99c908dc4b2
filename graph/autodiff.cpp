// Reverse-mode automatic differentiation over the graph IR.
//
// backward() walks the forward nodes in reverse topological order, starting
// from the loss with a seed of 1, and for each node that (a) the loss
// depends on and (b) depends on something in `wrt`, appends the nodes of
// that op's vector-Jacobian product. A value with several consumers gets the
// sum (ADD) of their contributions. Everything else is pruned: no node is
// emitted for a branch the loss does not read or that no `wrt` value feeds.
//
// One rule per differentiable forward op, with the rest of the op in
// graph/ops/ and found through the op registry (graph/ops/op_def.h). The ops
// that have no rule -- FILL (no inputs), ADAMW, ROW_MAX and the *_GRAD ops
// -- are an error only if the loss reaches a `wrt` value through them;
// integer values (ids, targets) never carry a gradient.
//
// Recomputed segments (graph/recompute.h) change only which values a rule
// reads; gradients still accumulate under the original values' ids.
#include "graph/autodiff.h"

#include <set>
#include <string>

#include "core/error.h"
#include "graph/compile_units.h"
#include "graph/ops/op_def.h"
#include "graph/ops/vjp.h"

namespace kiln::graph {
namespace {

Grads vjp(Graph& g, const VjpArgs& a, int node_index) {
  if (const VjpFn rule = op_def(a.node.op).vjp) return rule(g, a);
  autodiff_fail(std::string("the loss depends on a value being differentiated through ") + op_name(a.node.op) +
                " (node " + std::to_string(node_index) +
                "), which has no gradient rule; differentiate before the backward/optimizer ops");
}

bool is_f32(const Graph& g, ValueId v) { return g.value(v).dtype == KILN_F32; }
// Values that carry a gradient: floats of any width (bf16 and f16 too).
bool is_float(const Graph& g, ValueId v) { return kiln_dtype_is_float(g.value(v).dtype) != 0; }

}  // namespace

std::vector<ValueId> backward(Graph& g, ValueId loss, const std::vector<ValueId>& wrt,
                              const std::vector<RecomputeSegment>& recompute) {
  const size_t num_values = g.values().size();
  const size_t num_nodes = g.nodes().size();  // only the forward nodes present now
  auto check_id = [&](ValueId v, const char* what) {
    if (v < 0 || static_cast<size_t>(v) >= num_values)
      autodiff_fail(std::string(what) + " value id " + std::to_string(v) + " is not in the graph");
  };
  check_id(loss, "loss");
  if (!is_f32(g, loss) || g.shape(loss) != Shape{1})
    autodiff_fail("the loss must be f32 [1], got " + std::string(kiln_dtype_name(g.value(loss).dtype)) + " " +
                  to_string(g.shape(loss)));
  for (ValueId w : wrt) check_id(w, "wrt");
  Recomputation recomputation(recompute, num_nodes, num_values);

  // depends[v]: v is a float value that some `wrt` value feeds (or is one).
  std::vector<bool> depends(num_values, false);
  for (ValueId w : wrt) depends[static_cast<size_t>(w)] = is_float(g, w);
  for (size_t n = 0; n < num_nodes; ++n) {
    const Node& node = g.nodes()[n];
    bool any = false;
    for (ValueId v : node.inputs) any = any || depends[static_cast<size_t>(v)];
    if (any)
      for (ValueId v : node.outputs)
        depends[static_cast<size_t>(v)] = depends[static_cast<size_t>(v)] || is_float(g, v);
  }

  // grad[v]: the value holding d(loss)/d(v), accumulated over consumers.
  std::vector<ValueId> grad(num_values, kNoGradient);
  auto accumulate = [&](ValueId v, ValueId dv) {
    if (g.shape(dv) != g.shape(v))
      autodiff_fail("internal: gradient " + to_string(g.shape(dv)) + " for value of shape " + to_string(g.shape(v)));
    ValueId& slot = grad[static_cast<size_t>(v)];
    slot = slot == kNoGradient ? dv : g.add(slot, dv);
  };
  if (depends[static_cast<size_t>(loss)]) grad[static_cast<size_t>(loss)] = g.fill({1}, 1.0f);

  const int32_t caller_unit = g.unit();
  for (size_t n = num_nodes; n-- > 0;) {
    const Node node = g.nodes()[n];  // copy: rules append to g.nodes()
    // A rule's nodes (and the sums into its inputs' gradients) form the
    // backward compile unit of the node's own unit (graph/compile_units.h).
    g.set_unit(backward_unit(node.unit));
    std::vector<ValueId> dy;
    bool any_dy = false;
    for (ValueId v : node.outputs) {
      // Every consumer of v has added its part by now: v's gradient is whole.
      dy.push_back(grad[static_cast<size_t>(v)]);
      any_dy = any_dy || dy.back() != kNoGradient;
    }
    if (!any_dy) continue;  // the loss does not depend on this node
    std::vector<bool> need;
    bool any_need = false;
    for (ValueId v : node.inputs) {
      need.push_back(depends[static_cast<size_t>(v)]);
      any_need = any_need || need.back();
    }
    if (!any_need) continue;  // no `wrt` value feeds this node
    // In a recomputed segment the rule reads the replayed copy's values.
    const Node for_rule = recomputation.node_for_gradient(g, static_cast<int>(n));
    Grads dx = vjp(g, VjpArgs{for_rule, dy, need}, static_cast<int>(n));
    for (size_t i = 0; i < node.inputs.size(); ++i)
      if (need[i] && dx.at(i) != kNoGradient) accumulate(node.inputs[i], dx[i]);
  }

  g.set_unit(caller_unit);
  std::vector<ValueId> result;
  for (ValueId w : wrt) {
    ValueId d = grad[static_cast<size_t>(w)];
    if (d == kNoGradient) {  // a zero of w's dtype (FILL makes f32)
      d = g.fill(Shape(g.shape(w)), 0.0f);
      if (g.value(w).dtype != KILN_F32 && is_float(g, w)) d = g.cast(d, g.value(w).dtype);
    }
    result.push_back(d);
  }
  return result;
}

}  // namespace kiln::graph
