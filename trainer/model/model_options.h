// The model's architecture options, one row each; everything kiln does with
// an option comes from its row:
//   - its field and default in ModelArchitecture, GptConfig's architecture part (gpt.h),
//   - its command-line flag and --help text (register_model_flags),
//   - how meta.json keeps it, so a checkpoint rebuilds the same model
//     (trainer/checkpoint/model_config.cpp),
//   - whether the Hugging Face mappers know it: an export of a model that
//     uses an option they do not know is refused, never silently dropped
//     (trainer/checkpoint/hf_architecture.cpp).
// What the option does is the model builder's part (trainer/model/gpt.cpp).
// Adding one: a row here, its effect in gpt.cpp, its line in docs/CLI.md.
//
// Training choices (dropout, dtypes, recompute) and the parallel layout are
// GptConfig's other two parts (gpt.h), not architecture: no row, never saved.
#pragma once

#include <cstdint>
#include <string>

#include "kiln/ops.h"

namespace kiln::trainer {

enum class Normalization { LayerNorm, RMSNorm };
enum class PositionEmbedding { LearnedAbsolute, Rope, None, Alibi };

// Megatron's spellings (--normalization, --position-embedding-type); the
// parsers throw kiln::Error naming the flag for anything else.
const char* to_string(Normalization n);
const char* to_string(PositionEmbedding p);
Normalization parse_normalization(const std::string& s);
PositionEmbedding parse_position_embedding(const std::string& s);

// How a row's value is typed, given on the command line and kept in
// meta.json. Each codec names the field's C++ type.
namespace model_option {
struct Int {  // --flag N
  using type = int64_t;
};
struct Real {  // --flag X, refused where it does not survive float conversion
  using type = float;
};
struct NonNegativeReal {  // the same, at least 0
  using type = float;
};
struct Switch {  // --flag turns it on
  using type = bool;
};
struct NoSwitch {  // on by default; the flag (Megatron's --disable-...) turns it off
  using type = bool;
};
template <typename Enum, Enum (*Parse)(const std::string&)>
struct Choice {  // --flag NAME, one of to_string's names
  using type = Enum;
  static Enum parse(const std::string& s) { return Parse(s); }
};
using NormalizationChoice = Choice<Normalization, &parse_normalization>;
using PositionEmbeddingChoice = Choice<PositionEmbedding, &parse_position_embedding>;
// A switch for the MLP's activation op: meta.json records it as
// "activation": the op's name (one such row may exist: they share the key).
template <kiln_op Op>
struct ActivationOp {
  using type = bool;
  static const char* name() { return kiln_op_name(Op); }
};
using SquaredRelu = ActivationOp<KILN_OP_SQUARED_RELU>;

// How meta.json keeps a row.
enum class Saved {
  Required,        // always written; a meta.json without it is refused
  Optional,        // always written; absent (an older checkpoint), it reads as the default
  WhenNotDefault,  // written only when not the default, so other models' meta.json stay as they were
};
// Whether the Hugging Face mappers (trainer/checkpoint/hf_*.cpp) handle a
// row: Mapped, they express it or refuse the values they cannot; Unmapped,
// an export of a model with a value other than the default is refused.
enum class Hf { Mapped, Unmapped };
}  // namespace model_option

// X(codec, field, default, flag, saved, hf, help), in --help order. The
// flag is nullptr where other flags set the field (the comment says which).
// meta.json's key is the field's name.
// clang-format off
#define KILN_MODEL_OPTIONS(X) \
  X(Int, num_layers, 4, "--num-layers", Required, Mapped, "transformer layers") \
  X(Int, hidden_size, 128, "--hidden-size", Required, Mapped, "hidden size") \
  X(Int, num_attention_heads, 4, "--num-attention-heads", Required, Mapped, \
    "attention heads (must divide hidden size)") \
  X(Int, vocab_size, 256, "--vocab-size", Required, Mapped, "vocabulary size (byte-level default corpus: 256)") \
  X(Int, seq_length, 64, "--seq-length", Required, Mapped, "sequence length") \
  /* The learned position table's rows, of which the model uses the first seq_length (0: seq_length). */ \
  X(Int, max_position_embeddings, 0, "--max-position-embeddings", WhenNotDefault, Mapped, \
    "rows of the learned position table, >= --seq-length (the model uses the first --seq-length); no effect with " \
    "rope, alibi or none (default: --seq-length)") \
  X(NormalizationChoice, normalization, Normalization::LayerNorm, "--normalization", Optional, Mapped, \
    "LayerNorm | RMSNorm") \
  X(Real, layernorm_epsilon, 1e-5f, "--norm-epsilon", Required, Mapped, "epsilon of every LayerNorm / RMSNorm") \
  X(Switch, apply_layernorm_1p, false, "--apply-layernorm-1p", Optional, Mapped, \
    "norm weights stored zero-centred: scale by 1 + weight") \
  /* 0: 4h, or with swiglu int((4h * 2/3) / 64) * 64 (ffn_hidden()). */ \
  X(Int, ffn_hidden_size, 0, "--ffn-hidden-size", Optional, Mapped, \
    "MLP hidden size (default 4 x hidden size; with --swiglu int((4h x 2/3) / 64) x 64)") \
  X(Switch, swiglu, false, "--swiglu", Optional, Mapped, \
    "SwiGLU MLP: fc1 holds [gate; up], activation silu(gate) * up") \
  /* The exact 0.5 x (1 + erf(x / sqrt 2)) (Megatron's default, HF MPT's) instead of the tanh approximation */ \
  /* (GPT-2's, Megatron's --openai-gelu, kiln's default). */ \
  X(Switch, exact_gelu, false, "--exact-gelu", Optional, Mapped, \
    "kiln flag: the exact erf GELU in the MLP (Megatron's default without --openai-gelu, HF MPT's)") \
  /* relu(x)^2, a composite op (graph/decompose.h). */ \
  X(SquaredRelu, squared_relu, false, "--squared-relu", WhenNotDefault, Mapped, \
    "relu(x)^2 as the MLP's activation (Megatron's --squared-relu)") \
  /* 0: one per head (multi-head attention); set by --group-query-attention and --num-query-groups. */ \
  X(Int, num_query_groups, 0, nullptr, Optional, Mapped, "") \
  X(Int, kv_channels, 0, "--kv-channels", Optional, Mapped, "head dim (default hidden size / heads)") \
  X(Switch, untie_embeddings_and_output_weights, false, "--untie-embeddings-and-output-weights", Optional, Mapped, \
    "an output layer of its own instead of the word embedding") \
  X(NoSwitch, add_bias_linear, true, "--disable-bias-linear", Optional, Mapped, "no biases in the linear layers") \
  /* LayerNorm without beta (llm-foundry's MPT no_bias): no .bias parameter. */ \
  X(NoSwitch, add_bias_layernorm, true, "--disable-bias-layernorm", Optional, Mapped, \
    "kiln extension (MPT's no_bias): LayerNorm without a bias (beta) parameter") \
  X(Switch, add_qkv_bias, false, "--add-qkv-bias", Optional, Mapped, "a QKV bias even with --disable-bias-linear") \
  X(Switch, qk_layernorm, false, "--qk-layernorm", Optional, Mapped, \
    "normalize q and k over the head dim (--normalization type)") \
  X(PositionEmbeddingChoice, position_embedding_type, PositionEmbedding::LearnedAbsolute, \
    "--position-embedding-type", Optional, Mapped, "learned_absolute | rope | none | alibi (alibi: kiln extension, MPT)") \
  X(Int, rotary_base, 10000, "--rotary-base", Optional, Mapped, "RoPE base") \
  X(Real, rotary_percent, 1.0f, "--rotary-percent", Optional, Mapped, "fraction of the head dim RoPE rotates, in (0, 1]") \
  X(Switch, rotary_interleaved, false, "--rotary-interleaved", Optional, Mapped, \
    "rotate pairs (x[2i], x[2i+1]) instead of (x[i], x[i+R])") \
  X(Switch, use_rope_scaling, false, "--use-rope-scaling", Optional, Mapped, "Llama-3.1's RoPE frequency scaling") \
  X(Real, rope_scaling_factor, 8.0f, "--rope-scaling-factor", Optional, Mapped, "Llama-3.1 RoPE scaling factor") \
  X(Real, alibi_bias_max, 8.0f, "--alibi-bias-max", Optional, Mapped, \
    "kiln extension (MPT): ALiBi's largest slope exponent") \
  X(NonNegativeReal, clip_qkv, 0.0f, "--clip-qkv", Optional, Mapped, \
    "kiln extension (MPT): clamp the fused QKV output to [-X, X] (0: off)") \
  X(NonNegativeReal, init_method_std, 0.02f, "--init-method-std", Required, Mapped, "std of the normal weight init") \
  X(Switch, apply_residual_connection_post_layernorm, false, "--apply-residual-connection-post-layernorm", \
    WhenNotDefault, Unmapped, "each residual connection starts from the norm's output, not its input (BERT-style)")
// clang-format on

class Flags;
struct GptConfig;
struct ModelArchitecture;

// Every row's flag (rows with a flag), bound to cfg's fields.
void register_model_flags(Flags& flags, GptConfig& cfg);
// The rows' fields of `from` into `to`, whose training and layout fields
// stay (--use-checkpoint-args: the model from the checkpoint, the dropout
// from the command line, as Megatron).
void take_architecture(GptConfig& to, const ModelArchitecture& from);

}  // namespace kiln::trainer
