// The GPT-2 architecture as a graph: learned token and position
// embeddings, pre-LayerNorm blocks with causal multi-head attention and a
// GELU(tanh) MLP at 4x, a final LayerNorm, and an LM head tied to the token
// embedding. Parameter names follow Megatron-core's GPT model so users can
// recognise them in checkpoints.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace kiln::trainer {

struct GptConfig {
  int64_t num_layers = 4;
  int64_t hidden_size = 128;
  int64_t num_attention_heads = 4;
  int64_t vocab_size = 256;
  int64_t seq_length = 64;
  float layernorm_epsilon = 1e-5f;
  float init_method_std = 0.02f;

  int64_t ffn_hidden_size() const { return 4 * hidden_size; }
  int64_t head_dim() const { return hidden_size / num_attention_heads; }
  // Throws kiln::Error naming the flag if the shape is inconsistent.
  void validate() const;
};

// How a parameter is initialised and optimised.
struct ParamSpec {
  std::string name;
  graph::Shape shape;
  enum class Init { Normal, ScaledNormal, Zeros, Ones } init = Init::Normal;
  bool weight_decay = true;  // false for biases and LayerNorm parameters
};

std::vector<ParamSpec> gpt_parameters(const GptConfig& cfg);
int64_t parameter_count(const GptConfig& cfg);

// Training FLOPs per token (forward + backward), PaLM's accounting:
// 6 * parameters + 12 * layers * seq * hidden for attention.
double flops_per_token(const GptConfig& cfg);

// The forward pass over a [batch, seq] block of token ids. Adds one graph
// input per parameter (named as in gpt_parameters) and "tokens" [B, T] i32.
struct GptForward {
  std::map<std::string, graph::ValueId> params;
  graph::ValueId tokens = -1;
  graph::ValueId logits = -1;  // [B*T, V]
};
GptForward build_gpt_forward(graph::Graph& g, const GptConfig& cfg, int64_t batch);

}  // namespace kiln::trainer
