// The host side of each op, found by op code: its VJP rule and its reference
// (oracle) evaluation. The builder (`Graph::layernorm`, ...), the VJP and the
// reference of an op family live together in one file of graph/ops/, which
// fills its rows here through register_<family>_ops; the op's row in
// kiln/ops.h and its shape rule in kiln/op_rules.hpp complete it.
//
// The registry is built on first use by op_defs(), which calls every
// family's register function by name: static-initializer registration would
// be dropped by the linker from a static library no one references.
#pragma once

#include <array>
#include <vector>

#include "graph/graph.h"
#include "kiln/ops.h"

namespace kiln::graph {

struct VjpArgs;       // graph/ops/vjp.h
struct ReferenceCtx;  // graph/reference/reference_ctx.h

// A VJP rule appends to the graph the nodes of d(loss)/d(input) for each
// input the loss needs, and returns one entry per input: its gradient, or
// kNoGradient.
using Grads = std::vector<ValueId>;
using VjpFn = Grads (*)(Graph& g, const VjpArgs& args);
// Evaluates one node on the host, writing its outputs into the context.
using ReferenceFn = void (*)(const ReferenceCtx& c);
// Builds node `n` of `g` from other ops: appends to `g` the nodes that
// compute it from n.inputs (values of `g`) and returns one value per output
// of `n`, each made by an appended node, of its dtype and shape. The host
// expands a composite this way for a backend that lacks a kernel for it
// (graph/decompose.h), so a new activation needs no kernel anywhere.
using DecomposeFn = std::vector<ValueId> (*)(Graph& g, const Node& n);

struct OpDef {
  VjpFn vjp = nullptr;              // null: not differentiable (FILL, ADAMW, *_GRAD, ROW_MAX)
  ReferenceFn reference = nullptr;  // every op has one (a test checks it)
  // Non-null for a composite: the ops it is made of. The reference stays
  // the oracle that the decomposition, and any fused kernel, are held to.
  DecomposeFn decompose = nullptr;
};

using OpDefs = std::array<OpDef, KILN_OP_COUNT_>;

// The registry, one row per op code.
const OpDefs& op_defs();
// The row of `op`; throws kiln::Error for a code outside the table.
const OpDef& op_def(kiln_op op);

// One per file of graph/ops/, each filling the rows of its family.
void register_elementwise_ops(OpDefs& defs);
void register_matmul_ops(OpDefs& defs);
void register_embedding_ops(OpDefs& defs);
void register_norm_ops(OpDefs& defs);
void register_attention_ops(OpDefs& defs);
void register_loss_ops(OpDefs& defs);
void register_reduce_ops(OpDefs& defs);
void register_layout_ops(OpDefs& defs);
void register_optimizer_ops(OpDefs& defs);
void register_collective_ops(OpDefs& defs);
void register_vocab_parallel_ops(OpDefs& defs);
void register_rotary_ops(OpDefs& defs);
void register_dropout_ops(OpDefs& defs);
void register_cast_ops(OpDefs& defs);
void register_math_ops(OpDefs& defs);
void register_composite_activation_ops(OpDefs& defs);
void register_fp8_ops(OpDefs& defs);

}  // namespace kiln::graph
