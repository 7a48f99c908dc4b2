// CAST: conversion between the float dtypes (f32, bf16, f16).
//
// Its Graph builder, its VJP rule and its reference evaluation, registered
// in register_cast_ops at the bottom. The bits of every conversion are
// kiln/half.h's, which the reference interpreter applies when it stores a
// low-precision value; so the reference here only passes the values on.
#include <cstdint>

#include "graph/graph.h"
#include "graph/ops/op_def.h"
#include "graph/ops/vjp.h"
#include "graph/reference/reference_ctx.h"

namespace kiln::graph {

// ---------------------------------------------------------------- builders

ValueId Graph::cast(ValueId x, kiln_dtype dtype) {
  return add_node(KILN_OP_CAST, {x}, {static_cast<int64_t>(dtype)})[0];
}

namespace {

// ---------------------------------------------------------------- VJP rules

// y = cast(x): dy/dx is 1 wherever the conversion is defined, so dx is dy
// cast back to x's dtype (rounding the gradient as x itself is stored).
Grads vjp_cast(Graph& g, const VjpArgs& a) {
  Grads d = none_for(a);
  if (a.need[0]) {
    const kiln_dtype x_dtype = g.value(a.in(0)).dtype;
    d[0] = g.value(a.dy[0]).dtype == x_dtype ? a.dy[0] : g.cast(a.dy[0], x_dtype);
  }
  return d;
}

// ---------------------------------------------------------------- reference

// x's exact values; the interpreter rounds them to y's dtype as it stores y
// (to nearest even, overflow to inf, NaN kept), which is the whole op.
void op_cast(const ReferenceCtx& c) { c.out(0).f32 = c.f(0); }

}  // namespace

void register_cast_ops(OpDefs& defs) { defs[KILN_OP_CAST] = {vjp_cast, op_cast}; }

}  // namespace kiln::graph
