// Host collectives over the tensor-parallel group: ALL_REDUCE.
//
// For each op: its Graph builder, its VJP rule (none for ops that are
// themselves gradients or have no inputs to differentiate) and its
// reference evaluation, registered in register_collective_ops at the bottom.
#include <cstdint>
#include <vector>

#include "graph/graph.h"
#include "graph/ops/op_def.h"
#include "graph/ops/vjp.h"
#include "graph/reference/reference_ctx.h"

namespace kiln::graph {

// ---------------------------------------------------------------- builders

ValueId Graph::all_reduce(ValueId x, Reduction r) {
  return add_node(KILN_OP_ALL_REDUCE, {x}, {r == Reduction::Max ? 1 : 0})[0];
}

namespace {

// ---------------------------------------------------------------- VJP rules

// Tensor parallelism. y = sum over the group of x, where every rank goes on
// with the same y (Megatron's reduce-from-tensor-parallel-region): each
// rank's dy is already the whole gradient, so dx = dy. A max carries no
// gradient; it only ever feeds the stop-gradient rowmax below.
Grads vjp_all_reduce(Graph&, const VjpArgs& a) {
  if (a.node.iattrs.at(0) != 0)
    autodiff_fail("the loss is differentiated through an all_reduce max, which has no gradient");
  return {a.dy[0]};
}

// ---------------------------------------------------------------- reference

// Tensor parallelism. The reference is a group of one rank: the sum or
// max of x over {this rank} is x itself. Multi-rank groups are the host's
// business (it runs the collective over MPI between compiled pieces).
void op_all_reduce(const ReferenceCtx& c) {
  if (c.ia(0) != 0 && c.ia(0) != 1) c.fail("reduction must be 0 (sum) or 1 (max)");
  c.out(0).f32 = c.f(0);
}

}  // namespace

void register_collective_ops(OpDefs& defs) { defs[KILN_OP_ALL_REDUCE] = {vjp_all_reduce, op_all_reduce}; }

}  // namespace kiln::graph
