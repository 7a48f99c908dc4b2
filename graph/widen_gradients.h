// f16 parameter gradients computed in f32.
//
// With a 16-bit compute dtype a parameter's gradient comes back through its
// forward CAST as a CAST of the 16-bit gradient to f32. A weight's, a
// bias's or an embedding table's gradient is a sum over every token of the
// micro-batch (MATMUL, SUM_TO, EMBEDDING_GRAD), so with a mean loss it is
// O(1) where activation gradients are O(1/tokens): times an fp16 loss scale
// it reaches 65504 first (the default model's bias gradients overflowed at
// a scale of 8192, docs/MIXED_PRECISION.md). Rounding it to f16 only to
// widen it again adds nothing, so this pass makes such a node read its
// inputs widened to f32 and write the f32 gradient itself.
#pragma once

#include "graph/graph.h"

namespace kiln::graph {

// g with every MATMUL, SUM_TO or EMBEDDING_GRAD whose f16 output is read
// only by a CAST to f32 rewritten as that op on its float inputs CAST to
// f32, writing the CAST's value (so ports and readers are unchanged). bf16
// has f32's range, so bf16 graphs (and f32 ones) come back unchanged.
Graph widen_f16_parameter_gradients(const Graph& g);

}  // namespace kiln::graph
