// The GPT architecture as a graph. The defaults are GPT-2's: learned token
// and position embeddings, pre-LayerNorm blocks with causal multi-head
// attention and a GELU(tanh) MLP at 4x, a final LayerNorm, and an LM head
// tied to the token embedding. Megatron-LM's architecture options turn it
// into Llama-3 / MPT / GPT-3 style models (RMSNorm, grouped-query
// attention, untied output layer, no biases, QK-LayerNorm, the exact GELU,
// LayerNorm without bias, ...). Parameter names follow Megatron-core's GPT
// model so users can recognise them in checkpoints.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/recompute.h"
#include "trainer/model/fp8_recipe.h"
#include "trainer/model/model_options.h"

namespace kiln::trainer {

// Activation recomputation (Megatron's --recompute-granularity and
// --recompute-method; docs/DISTRIBUTED.md).
enum class RecomputeGranularity { None, Selective, Full };
enum class RecomputeMethod { None, Uniform, Block };

// A model's configuration is three parts, each its own type so a function
// says which it depends on: the architecture (what a checkpoint's meta.json
// holds; one field per row of model_options.h), the layout (where this
// rank's part sits: the job's ParallelState and pipeline split, never
// saved) and the training choices (dropout, dtypes, recompute: how this run
// trains it, never saved). GptConfig is all three, as the builder needs.

// The architecture; the defaults are GPT-2's.
struct ModelArchitecture {
#define KILN_MODEL_FIELD(codec, field, default_value, ...) model_option::codec::type field = default_value;
  KILN_MODEL_OPTIONS(KILN_MODEL_FIELD)
#undef KILN_MODEL_FIELD

  int64_t ffn_hidden() const;
  int64_t head_dim() const { return kv_channels > 0 ? kv_channels : hidden_size / num_attention_heads; }
  int64_t query_groups() const { return num_query_groups > 0 ? num_query_groups : num_attention_heads; }
  bool qkv_bias() const { return add_bias_linear || add_qkv_bias; }
  // Rotary dims per head are 2 * rotary_pairs(): --rotary-percent of the head dim.
  int64_t rotary_pairs() const;
  int64_t position_table_rows() const { return max_position_embeddings > 0 ? max_position_embeddings : seq_length; }
  // The sizes left at 0 for their defaults filled in (ffn_hidden_size,
  // num_query_groups, kv_channels): the same model.
  ModelArchitecture with_derived_sizes() const {
    ModelArchitecture a = *this;
    a.ffn_hidden_size = ffn_hidden();
    a.num_query_groups = query_groups();
    a.kv_channels = head_dim();
    return a;
  }
};

// The layout of this rank's part of the model (trainer/parallel_layout.h
// places a rank from the job's ParallelState). Checkpoints hold full tensors
// of the whole model, so none of it is saved.
struct ModelLayout {
  // Tensor-parallel ranks the model is split over (Megatron's
  // --tensor-model-parallel-size).
  int64_t tensor_parallel = 1;
  // Megatron's --sequence-parallel (with tensor_parallel > 1): between the
  // tensor-parallel layers (the norms, dropout, residual adds) each rank
  // holds its slice of the sequence, [B, T / tensor_parallel, C]; the
  // all-reduces become reduce-scatters, and the tensor-parallel layers'
  // inputs are all-gathered.
  bool sequence_parallel = false;
  // The pipeline stage this config builds (--pipeline-model-parallel-size;
  // docs/DISTRIBUTED.md). Layers [first_layer, end_layer) keep their global
  // numbers (names, dropout sites); the first stage (pre_process) holds the
  // embedding, the last (post_process) the final norm, the LM head and the
  // loss, and with tied embeddings its own copy of the word embedding. The
  // defaults are the whole model.
  int64_t first_layer = 0;
  int64_t end_layer = -1;  // -1: num_layers
  bool pre_process = true;
  bool post_process = true;
};

// How this run trains the model; not saved in checkpoints.
struct TrainingChoices {
  // The dropout probabilities (trainer/model/dropout_keys.h). 0 builds no
  // dropout; the trainer's flags default to Megatron's 0.1.
  float hidden_dropout = 0.0f;
  float attention_dropout = 0.0f;
  // The dtype the model computes in (--bf16, --fp16). The parameters stay
  // f32 graph inputs (the optimizer's main copy); the forward casts them to
  // this dtype, so activations and their gradients are stored in it, and
  // CAST's gradient brings each parameter's gradient back to f32.
  kiln_dtype compute_dtype = KILN_F32;
  // The dtype of the gradient accumulators grad.<param> (--main-grads-dtype):
  // f32, or bf16, into which each micro-batch's f32 gradient is added and
  // rounded (docs/MIXED_PRECISION.md, "bf16 main gradients").
  kiln_dtype grad_dtype = KILN_F32;
  // With bf16 grad_dtype: the clip factor scales the bf16 accumulators as
  // stored, the product rounded to bf16 (the precision-aware optimizer,
  // ADAMW_CLIP), or the optimizer widens them first and clips in f32
  // (--grad-reduce-in-bf16 alone: Megatron's `main_grad.float()` copy).
  bool clip_stored_gradients = true;
  // The optimizer step takes the clip factor as an input of its own
  // ("clip", ADAMW_CLIP) instead of inside AdamW's grad_scale.
  bool clips_apart() const { return grad_dtype != KILN_F32 && clip_stored_gradients; }
  // --apply-query-key-layer-scaling, which applies with a 16-bit compute
  // dtype only: layer l's attention scores are stored divided by l and
  // multiplied back by l inside the softmax's fp32 arithmetic (Megatron's
  // guard against fp16 scores overflowing); the same function, other roundings.
  bool query_key_layer_scaling = false;
  // The attention core as one ATTENTION node (and ATTENTION_GRAD in the
  // backward) instead of MATMUL, CAUSAL_SOFTMAX, MATMUL: for a backend with
  // a fused kernel, which never stores the [T, T] probabilities. With
  // attention dropout the node is ATTENTION_DROPOUT (and its gradient), the
  // chain's mask bit for bit. Where a layer's attention needs more than
  // that (ALiBi, document masks) it keeps the chain. A backend without the
  // kernel computes the same bits from the op's decomposition, but
  // recomputes the probabilities in the backward, so the trainer sets this
  // only for a backend that lists the op (choose_attention).
  bool fused_attention = false;
  // Activation recomputation: the backward recomputes instead of keeping
  // the attention core of every layer (Selective) or whole layers (Full):
  // with Uniform, each group of recompute_num_layers layers of the stage
  // keeping only the group's input; with Block, the stage's first
  // recompute_num_layers layers, one by one.
  // Megatron's document flags for packed samples (trainer/model/document_inputs.h):
  // positions restart after each EOD, attention stays inside each document,
  // and tokens whose input is EOD carry no loss.
  bool reset_position_ids = false;
  bool reset_attention_mask = false;
  bool eod_mask_loss = false;
  // --fp8-format: the layers' linear GEMMs on FP8 operands
  // (trainer/model/fp8_recipe.h).
  Fp8Recipe fp8;
  RecomputeGranularity recompute_granularity = RecomputeGranularity::None;
  RecomputeMethod recompute_method = RecomputeMethod::None;
  int64_t recompute_num_layers = 0;
};

struct GptConfig : ModelArchitecture, ModelLayout, TrainingChoices {
  GptConfig() = default;
  // An architecture laid out and trained as given (the whole model, one
  // rank, no dropout, f32, by default).
  explicit GptConfig(const ModelArchitecture& a, const ModelLayout& l = {}, const TrainingChoices& t = {})
      : ModelArchitecture(a), ModelLayout(l), TrainingChoices(t) {}
  const ModelArchitecture& architecture() const { return *this; }
  // Per tensor-parallel rank.
  int64_t local_heads() const { return num_attention_heads / tensor_parallel; }
  int64_t local_query_groups() const { return query_groups() / tensor_parallel; }
  int64_t local_vocab() const { return vocab_size / tensor_parallel; }
  bool splits_sequence() const { return sequence_parallel && tensor_parallel > 1; }
  // Tokens per sample in this rank's hidden states (between layers, and
  // what a pipeline stage hands on).
  int64_t local_seq_length() const { return splits_sequence() ? seq_length / tensor_parallel : seq_length; }
  int64_t stage_end() const { return end_layer < 0 ? num_layers : end_layer; }
  bool is_pipeline_stage() const { return !pre_process || !post_process; }
  // Throws kiln::Error naming the flag if the shape is inconsistent.
  void validate() const;
  // This config with the sizes left at 0 for their defaults filled in
  // (ffn_hidden_size, num_query_groups, kv_channels): the same model.
  GptConfig with_derived_sizes() const { return GptConfig(ModelArchitecture::with_derived_sizes(), *this, *this); }
  // This config for evaluation and generation: no dropout.
  GptConfig without_dropout() const {
    GptConfig c = *this;
    c.hidden_dropout = c.attention_dropout = 0.0f;
    return c;
  }
};

// How a parameter is initialised, optimised and split over tensor-parallel
// ranks (Megatron's layout): QKV and fc1 are column-parallel (rows of the
// [out, in] weight and the bias split), attention-proj and fc2 row-parallel
// (columns split, bias replicated), the word embedding and an untied output
// layer vocab-parallel (rows split); norms and position embeddings are
// replicated. SwiGLU's fc1 holds two full tensors [gate; up] along its rows
// (shard_chunks 2): each rank takes its rows of every chunk, as
// Megatron-core does, so checkpoints stay layout-free.
struct ParamSpec {
  std::string name;
  graph::Shape full_shape;  // as in a checkpoint
  enum class Init { Normal, ScaledNormal, Zeros, Ones } init = Init::Normal;
  bool weight_decay = true;  // false for biases and LayerNorm parameters
  int shard_dim = -1;        // the dim split over tensor-parallel ranks; -1: replicated
  graph::Shape shape;        // one rank's part (== full_shape without tensor parallelism)
  int64_t shard_chunks = 1;  // shard_dim is this many equal chunks, each split over the ranks
  // The parameter's index in the whole model's list: its initialisation
  // stream, so a pipeline stage draws the same values as one process.
  uint64_t init_stream = 0;
  // The word embedding (each stage's copy of a tied one) and the untied
  // output layer: Megatron's is_embedding_or_output_parameter, the
  // parameters --decoupled-lr schedules.
  bool embedding_or_output = false;
};

// Every parameter of cfg's pipeline stage (the whole model by default), with
// `shape` for cfg.tensor_parallel ranks.
std::vector<ParamSpec> gpt_parameters(const GptConfig& cfg);
int64_t parameter_count(const GptConfig& cfg);
// Each parameter's full (checkpoint) shape by name: what a format
// converter checks a file's tensors against.
std::map<std::string, graph::Shape> parameter_shapes(const GptConfig& cfg);

// What keeps the attention core of cfg's layers on the MATMUL,
// CAUSAL_SOFTMAX, MATMUL chain where fused_attention asks for the ATTENTION
// node, whose kernels compute the plain causal core only. The layers
// (gpt.cpp) and the run's log line (trainer/attention_backend.h) both ask
// this, so what is logged is what is built.
enum class AttentionChainReason { None, Alibi, DocumentMask };
AttentionChainReason attention_chain_reason(const GptConfig& cfg);
// One phrase for a log line, e.g. "ALiBi biases the scores"; "" for None.
const char* describe(AttentionChainReason r);

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
  std::map<std::string, graph::ValueId> param_inputs;  // the f32 graph inputs, to differentiate against
  std::map<std::string, graph::ValueId> params;        // what the model computes with (cast to compute_dtype)
  graph::ValueId tokens = -1;
  graph::ValueId token_mask = -1;  // "token_mask" [B*T] f32 input, tensor parallelism only
  graph::ValueId logits = -1;      // [B*T, V / tensor_parallel]
  // A pipeline stage's activations: "hidden_in" [B*T, C] (every stage but
  // the first, instead of "tokens") and what it hands on (every stage but
  // the last, instead of logits).
  graph::ValueId hidden_in = -1;
  graph::ValueId hidden_out = -1;
  // The forward node ranges graph::backward recomputes (cfg's recompute_*).
  std::vector<graph::RecomputeSegment> recompute_segments;
};
inline constexpr const char* kHiddenIn = "hidden_in";
GptForward build_gpt_forward(graph::Graph& g, const GptConfig& cfg, int64_t batch);

// The mean cross-entropy of the forward's logits against "targets"
// [B, T] (an input it adds): one op without tensor parallelism, else the
// vocab-parallel form (a max and a sum all-reduced over the group).
graph::ValueId gpt_loss(graph::Graph& g, const GptForward& f, const GptConfig& cfg, int64_t batch);

}  // namespace kiln::trainer
