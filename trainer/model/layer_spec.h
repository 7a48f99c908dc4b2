// A transformer layer as Megatron-core's module specs see it: which part
// fills each slot. The architecture options (model_options.h) choose the
// parts; the builder (gpt.cpp) assembles a layer from them, each part one
// small function, and the Hugging Face export picks its architecture by the
// spec (trainer/checkpoint/hf_architecture.cpp). A new kind of part (an MoE
// MLP, say) is a value here, its function in gpt.cpp, and the mappers that
// can express it.
#pragma once

#include "trainer/model/model_options.h"

namespace kiln::trainer {

struct ModelArchitecture;

// The MLP between fc1 and fc2: an activation of fc1's output, or SwiGLU's
// silu(gate) * up over fc1's two halves.
enum class MlpKind { Gelu, GeluErf, SquaredRelu, SwiGlu };
const char* to_string(MlpKind m);

struct LayerSpec {
  Normalization norm = Normalization::LayerNorm;                     // every norm of the model
  PositionEmbedding positions = PositionEmbedding::LearnedAbsolute;  // learned: added at the embedding
  MlpKind mlp = MlpKind::Gelu;
};

LayerSpec layer_spec(const ModelArchitecture& a);

}  // namespace kiln::trainer
