#include "trainer/model/layer_spec.h"

#include "trainer/model/gpt.h"

namespace kiln::trainer {

// An activation's name is its op's (the op table is the one place op names
// are spelled); SwiGLU is no single op.
const char* to_string(MlpKind m) {
  switch (m) {
    case MlpKind::Gelu: return kiln_op_name(KILN_OP_GELU);
    case MlpKind::GeluErf: return kiln_op_name(KILN_OP_GELU_ERF);
    case MlpKind::SquaredRelu: return kiln_op_name(KILN_OP_SQUARED_RELU);
    case MlpKind::SwiGlu: return "swiglu";
  }
  return "?";
}

// GptConfig::validate refuses more than one MLP option, so at most one of
// swiglu, squared_relu and exact_gelu is set.
LayerSpec layer_spec(const ModelArchitecture& a) {
  LayerSpec s;
  s.norm = a.normalization;
  s.positions = a.position_embedding_type;
  s.mlp = a.swiglu         ? MlpKind::SwiGlu
          : a.squared_relu ? MlpKind::SquaredRelu
          : a.exact_gelu   ? MlpKind::GeluErf
                           : MlpKind::Gelu;
  return s;
}

}  // namespace kiln::trainer
