// The GPT-2 architecture as a graph: learned token and position
// embeddings, pre-LayerNorm blocks with causal multi-head attention and a
// GELU(tanh) MLP at 4x, a final LayerNorm, and an LM head tied to the token
// embedding. Parameter names follow Megatron-core's GPT model so users can
// recognise them in checkpoints.
#pragma once

#include <cstdint>
#include <map>
#include <set>
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
  // Tensor-parallel ranks the model is split over (Megatron's
  // --tensor-model-parallel-size). A layout, not part of the model: it is
  // not saved in checkpoints, which hold full tensors.
  int64_t tensor_parallel = 1;

  int64_t ffn_hidden_size() const { return 4 * hidden_size; }
  int64_t head_dim() const { return hidden_size / num_attention_heads; }
  // Per tensor-parallel rank.
  int64_t local_heads() const { return num_attention_heads / tensor_parallel; }
  int64_t local_vocab() const { return vocab_size / tensor_parallel; }
  // Throws kiln::Error naming the flag if the shape is inconsistent.
  void validate() const;
};

// How a parameter is initialised, optimised and split over tensor-parallel
// ranks (Megatron's layout): QKV and fc1 are column-parallel (rows of the
// [out, in] weight and the bias split), attention-proj and fc2 row-parallel
// (columns split, bias replicated), the word embedding vocab-parallel (rows
// split); LayerNorms and position embeddings are replicated.
struct ParamSpec {
  std::string name;
  graph::Shape full_shape;  // as in a checkpoint
  enum class Init { Normal, ScaledNormal, Zeros, Ones } init = Init::Normal;
  bool weight_decay = true;  // false for biases and LayerNorm parameters
  int shard_dim = -1;        // the dim split over tensor-parallel ranks; -1: replicated
  graph::Shape shape;        // one rank's part (== full_shape without tensor parallelism)
};

// Every parameter, with `shape` for cfg.tensor_parallel ranks.
std::vector<ParamSpec> gpt_parameters(const GptConfig& cfg);
int64_t parameter_count(const GptConfig& cfg);

// Training FLOPs per token (forward + backward), PaLM's accounting:
// 6 * parameters + 12 * layers * seq * hidden for attention.
double flops_per_token(const GptConfig& cfg);

// The forward pass over a [batch, seq] block of token ids. Adds one graph
// input per parameter (named as in gpt_parameters) and "tokens" [B, T] i32.
//
// With tensor parallelism each rank builds the same graph over its shards:
// "tokens" and "token_mask" come from shard_input_ids, the loss's "targets"
// from shard_token_ids (trainer/model/tensor_parallel.h), the logits are the shard's columns, and the
// ALL_REDUCE nodes are Megatron's: after the vocab-parallel embedding and
// after each row-parallel layer (2 per layer forward); the inputs of the
// column-parallel layers and of the LM head get their gradients all-reduced
// in backward (2 per layer).
struct GptForward {
  std::map<std::string, graph::ValueId> params;
  graph::ValueId tokens = -1;
  graph::ValueId token_mask = -1;                   // "token_mask" [B*T] f32, tensor parallelism only
  graph::ValueId logits = -1;                       // [B*T, V / tensor_parallel]
  std::set<graph::ValueId> all_reduce_gradient_of;  // for graph::backward
};
GptForward build_gpt_forward(graph::Graph& g, const GptConfig& cfg, int64_t batch);

// The mean cross-entropy of the forward's logits against "targets"
// [B, T] (an input it adds): one op without tensor parallelism, else the
// vocab-parallel form (a max and a sum all-reduced over the group).
graph::ValueId gpt_loss(graph::Graph& g, const GptForward& f, const GptConfig& cfg, int64_t batch);

}  // namespace kiln::trainer
