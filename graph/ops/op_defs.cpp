// The op registry: every family registers its rows once, on first use.
#include <string>

#include "core/error.h"
#include "graph/ops/op_def.h"

namespace kiln::graph {

const OpDefs& op_defs() {
  static const OpDefs defs = [] {
    OpDefs d{};
    register_elementwise_ops(d);
    register_matmul_ops(d);
    register_embedding_ops(d);
    register_norm_ops(d);
    register_attention_ops(d);
    register_loss_ops(d);
    register_reduce_ops(d);
    register_layout_ops(d);
    register_optimizer_ops(d);
    register_collective_ops(d);
    register_vocab_parallel_ops(d);
    register_rotary_ops(d);
    register_dropout_ops(d);
    register_cast_ops(d);
    register_math_ops(d);
    register_composite_activation_ops(d);  // after elementwise: adds the activations' decompositions
    register_fp8_ops(d);
    return d;
  }();
  return defs;
}

const OpDef& op_def(kiln_op op) {
  const int code = static_cast<int>(op);
  if (code < 0 || code >= KILN_OP_COUNT_) throw Error("graph: unknown op code " + std::to_string(code));
  return op_defs()[static_cast<size_t>(code)];
}

}  // namespace kiln::graph
