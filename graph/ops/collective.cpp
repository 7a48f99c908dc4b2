// Host collectives, each over the process group its last int attribute
// names (kiln_group): ALL_REDUCE, sequence parallelism's ALL_GATHER,
// REDUCE_SCATTER and SCATTER, and COPY_TO_TP_REGION, whose forward is the
// identity and whose backward is an all-reduce. A gradient runs over the
// group of the collective it comes from.
//
// For each op: its Graph builder, its VJP rule (none for ops that are
// themselves gradients or have no inputs to differentiate) and its
// reference evaluation, registered in register_collective_ops at the bottom.
#include <cstdint>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/ops/op_def.h"
#include "graph/ops/vjp.h"
#include "graph/reference/reference_ctx.h"

namespace kiln::graph {

// ---------------------------------------------------------------- builders

ValueId Graph::all_reduce(ValueId x, kiln_group group, Reduction r) {
  return add_node(KILN_OP_ALL_REDUCE, {x}, {r == Reduction::Max ? 1 : 0, group})[0];
}

ValueId Graph::copy_to_tp_region(ValueId x, kiln_group group) {
  return add_node(KILN_OP_COPY_TO_TP_REGION, {x}, {group})[0];
}

ValueId Graph::all_gather(ValueId x, int64_t axis, int64_t ranks, kiln_group group) {
  return add_node(KILN_OP_ALL_GATHER, {x}, {axis, ranks, group})[0];
}

ValueId Graph::reduce_scatter(ValueId x, int64_t axis, int64_t ranks, kiln_group group) {
  return add_node(KILN_OP_REDUCE_SCATTER, {x}, {axis, ranks, group})[0];
}

ValueId Graph::scatter(ValueId x, int64_t axis, int64_t ranks, kiln_group group) {
  return add_node(KILN_OP_SCATTER, {x}, {axis, ranks, group})[0];
}

namespace {

// The group a collective node runs over: its last int attribute.
kiln_group group_of(const Node& n) { return static_cast<kiln_group>(n.iattrs.back()); }

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

// y = x on every rank, each using y with its shard of the weights only:
// the loss depends on x through every rank's use, so dx is the sum of every
// rank's dy. ALL_REDUCE is f32 only: a 16-bit gradient is summed in f32 and
// rounded once.
Grads vjp_copy_to_tp_region(Graph& g, const VjpArgs& a) {
  const ValueId dy = a.dy[0];
  const kiln_dtype dtype = g.value(dy).dtype;
  const kiln_group group = group_of(a.node);
  if (dtype == KILN_F32) return {g.all_reduce(dy, group)};
  return {g.cast(g.all_reduce(g.cast(dy, KILN_F32), group), dtype)};
}

// Sequence parallelism, as Megatron's mappings. y = every rank's part: the
// loss depends on rank r's x through every rank's use of y, so dx is rank
// r's part of the sum of every rank's dy.
Grads vjp_all_gather(Graph& g, const VjpArgs& a) {
  return {g.reduce_scatter(a.dy[0], a.node.iattrs.at(0), a.node.iattrs.at(1), group_of(a.node))};
}

// y = part r of the sum: every rank's x reaches every part, so dx is the
// whole gradient, every rank's dy gathered.
Grads vjp_reduce_scatter(Graph& g, const VjpArgs& a) {
  return {g.all_gather(a.dy[0], a.node.iattrs.at(0), a.node.iattrs.at(1), group_of(a.node))};
}

// y = part r of a tensor every rank holds whole (and goes on with only its
// part of): dx gathers the parts' gradients.
Grads vjp_scatter(Graph& g, const VjpArgs& a) {
  return {g.all_gather(a.dy[0], a.node.iattrs.at(0), a.node.iattrs.at(1), group_of(a.node))};
}

// ---------------------------------------------------------------- reference

// Tensor parallelism. The reference is a group of one rank: the sum or
// max of x over {this rank} is x itself. Multi-rank groups are the host's
// business (it runs the collective over MPI between compiled pieces).
void op_all_reduce(const ReferenceCtx& c) {
  if (c.ia(0) != 0 && c.ia(0) != 1) c.fail("reduction must be 0 (sum) or 1 (max)");
  c.out(0).f32 = c.f(0);
}

// The forward is the identity on any group.
void op_copy_to_tp_region(const ReferenceCtx& c) { c.out(0).f32 = c.f(0); }

// The sequence-parallel collectives on a group of one rank, which holds
// all of every tensor: each is the identity. A larger group's result
// depends on the other ranks' data, which only the host has.
void op_sequence_parallel(const ReferenceCtx& c) {
  if (c.ia(1) != 1)
    c.fail("a collective over " + std::to_string(c.ia(1)) +
           " ranks runs on the host between compiled pieces; the reference runs groups of one");
  c.out(0).f32 = c.f(0);
}

}  // namespace

void register_collective_ops(OpDefs& defs) {
  defs[KILN_OP_ALL_REDUCE] = {vjp_all_reduce, op_all_reduce};
  defs[KILN_OP_ALL_GATHER] = {vjp_all_gather, op_sequence_parallel};
  defs[KILN_OP_REDUCE_SCATTER] = {vjp_reduce_scatter, op_sequence_parallel};
  defs[KILN_OP_SCATTER] = {vjp_scatter, op_sequence_parallel};
  defs[KILN_OP_COPY_TO_TP_REGION] = {vjp_copy_to_tp_region, op_copy_to_tp_region};
}

}  // namespace kiln::graph
