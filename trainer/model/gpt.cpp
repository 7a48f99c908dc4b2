#include "trainer/model/gpt.h"

#include <fmt/format.h>

#include <cmath>

#include "core/error.h"
#include "graph/compile_units.h"
#include "trainer/model/document_inputs.h"
#include "trainer/model/dropout_keys.h"
#include "trainer/model/layer_spec.h"
#include "trainer/model/model_size.h"
#include "trainer/model/position_inputs.h"

namespace kiln::trainer {

using graph::Graph;
using graph::Shape;
using graph::ValueId;

int64_t ModelArchitecture::ffn_hidden() const {
  if (ffn_hidden_size > 0) return ffn_hidden_size;
  // Megatron's arguments.py: SwiGLU keeps the parameter count of a 4h MLP
  // (two thirds of the width for three matrices), rounded down to 64.
  if (swiglu) return (4 * hidden_size * 2 / 3) / 64 * 64;
  return 4 * hidden_size;
}

int64_t ModelArchitecture::rotary_pairs() const {
  return static_cast<int64_t>(static_cast<double>(head_dim()) * static_cast<double>(rotary_percent)) / 2;
}

void GptConfig::validate() const {
  auto positive = [](int64_t v, const char* flag) {
    if (v <= 0) throw Error(std::string(flag) + " must be positive, got " + std::to_string(v));
  };
  positive(num_layers, "--num-layers");
  positive(hidden_size, "--hidden-size");
  positive(num_attention_heads, "--num-attention-heads");
  positive(vocab_size, "--vocab-size");
  positive(seq_length, "--seq-length");
  if (max_position_embeddings != 0 && max_position_embeddings < seq_length)
    throw Error("--max-position-embeddings " + std::to_string(max_position_embeddings) +
                " is smaller than --seq-length " + std::to_string(seq_length) +
                "; the position table needs a row per position: raise it or leave it out");
  if (max_position_embeddings > seq_length && position_embedding_type != PositionEmbedding::LearnedAbsolute)
    throw Error("internal: a position table of " + std::to_string(max_position_embeddings) +
                " rows without learned absolute positions");
  if (kv_channels < 0) throw Error("--kv-channels must be positive, got " + std::to_string(kv_channels));
  if (kv_channels == 0 && hidden_size % num_attention_heads != 0)
    throw Error("--num-attention-heads " + std::to_string(num_attention_heads) + " does not divide --hidden-size " +
                std::to_string(hidden_size) + "; pick a head count that divides the hidden size");
  if (ffn_hidden_size < 0) throw Error("--ffn-hidden-size must be positive, got " + std::to_string(ffn_hidden_size));
  if (ffn_hidden() <= 0)
    throw Error("--swiglu with --hidden-size " + std::to_string(hidden_size) +
                " gives an FFN size of 0 (int((4h * 2/3) / 64) * 64); set --ffn-hidden-size");
  if (num_query_groups < 0) throw Error("--num-query-groups must be positive, got " + std::to_string(num_query_groups));
  if (num_attention_heads % query_groups() != 0)
    throw Error("--num-query-groups " + std::to_string(query_groups()) + " does not divide --num-attention-heads " +
                std::to_string(num_attention_heads) + "; each query group holds the same number of heads");
  if (!(layernorm_epsilon > 0.0f)) throw Error("--norm-epsilon must be positive");
  if (position_embedding_type == PositionEmbedding::Rope) {
    if (!(rotary_percent > 0.0f && rotary_percent <= 1.0f))
      throw Error(fmt::format("--rotary-percent {:g} is not in (0, 1]", rotary_percent));
    if (rotary_pairs() < 1)
      throw Error(fmt::format("--rotary-percent {:g}", rotary_percent) + " leaves no rotary dims of head dim " +
                  std::to_string(head_dim()) + "; rotary dims are 2 * int(head dim * percent) / 2");
    if (rotary_base <= 0) throw Error("--rotary-base must be positive, got " + std::to_string(rotary_base));
    if (use_rope_scaling && !(rope_scaling_factor >= 1.0f))
      throw Error(fmt::format("--rope-scaling-factor must be at least 1, got {:g}", rope_scaling_factor));
  }
  if (position_embedding_type == PositionEmbedding::Alibi && !(alibi_bias_max > 0.0f))
    throw Error(fmt::format("--alibi-bias-max must be positive, got {:g}", alibi_bias_max));
  if (exact_gelu && swiglu)
    throw Error("--exact-gelu selects the GELU MLP's activation, and --swiglu has no GELU; drop one of them");
  // Megatron asserts the same: one activation per MLP.
  if (squared_relu && (swiglu || exact_gelu))
    throw Error(std::string("--squared-relu replaces the MLP's activation, and ") +
                (swiglu ? "--swiglu" : "--exact-gelu") + " chooses another; drop one of them");
  if (!add_bias_layernorm && normalization != Normalization::LayerNorm)
    throw Error("--disable-bias-layernorm applies to --normalization LayerNorm; RMSNorm has no bias anyway");
  if (clip_qkv < 0.0f) throw Error("--clip-qkv must not be negative (0: off), got " + std::to_string(clip_qkv));
  positive(tensor_parallel, "--tensor-model-parallel-size");
  const std::string tp = " is not divisible by --tensor-model-parallel-size " + std::to_string(tensor_parallel);
  if (num_attention_heads % tensor_parallel != 0)
    throw Error("--num-attention-heads " + std::to_string(num_attention_heads) + tp +
                "; each tensor-parallel rank holds whole heads");
  if (query_groups() % tensor_parallel != 0)
    throw Error("--num-query-groups " + std::to_string(query_groups()) + tp +
                "; each tensor-parallel rank holds whole query groups (Megatron's rule)");
  if (ffn_hidden() % tensor_parallel != 0)
    throw Error("--ffn-hidden-size " + std::to_string(ffn_hidden()) + tp + "; each rank holds an equal share");
  if (vocab_size % tensor_parallel != 0)
    throw Error("--vocab-size " + std::to_string(vocab_size) + tp +
                "; pick a multiple (with --vocab-file, kiln pads the vocab like Megatron)");
  if (splits_sequence() && seq_length % tensor_parallel != 0)
    throw Error("--seq-length " + std::to_string(seq_length) + tp +
                "; with --sequence-parallel each rank holds an equal slice of the sequence");
  if (recompute_granularity == RecomputeGranularity::Full &&
      (recompute_method == RecomputeMethod::None || recompute_num_layers < 1))
    throw Error(
        "--recompute-granularity full needs --recompute-method uniform|block and --recompute-num-layers N >= 1");
  check_model_size(*this);
}

namespace {
// Whether a parameter belongs to cfg's pipeline stage (Megatron's split):
// its layers, the embedding on the first stage, the final norm and output
// layer on the last, and the tied word embedding on both.
bool on_stage(const GptConfig& c, const std::string& name) {
  const std::string layers = "decoder.layers.";
  if (name.rfind(layers, 0) == 0) {
    const int64_t l = std::stoll(name.substr(layers.size()));
    return l >= c.first_layer && l < c.stage_end();
  }
  if (name == "embedding.word_embeddings.weight")
    return c.pre_process || (c.post_process && !c.untie_embeddings_and_output_weights);
  if (name.rfind("embedding.", 0) == 0) return c.pre_process;
  return c.post_process;
}
}  // namespace

std::vector<ParamSpec> gpt_parameters(const GptConfig& c) {
  using Init = ParamSpec::Init;
  const int64_t C = c.hidden_size, F = c.ffn_hidden(), D = c.head_dim();
  const int64_t heads = c.num_attention_heads, groups = c.query_groups();
  // fc1 output rows: [gate; up] with SwiGLU.
  const int64_t fc1_chunks = c.swiglu ? 2 : 1;
  constexpr int kRows = 0, kColumns = 1, kReplicated = -1;
  std::vector<ParamSpec> p;
  auto add = [&](std::string name, const graph::Shape& shape, Init init, bool decay, int shard_dim,
                 int64_t chunks = 1) {
    p.push_back({std::move(name), shape, init, decay, shard_dim, shape, chunks});
    if (shard_dim >= 0) p.back().shape[static_cast<size_t>(shard_dim)] /= c.tensor_parallel;
  };
  // Norm weights multiply by w (or 1 + w, zero-initialised, with
  // --apply-layernorm-1p); only LayerNorm has a bias, and not with --disable-bias-layernorm.
  const Init norm_init = c.apply_layernorm_1p ? Init::Zeros : Init::Ones;
  auto add_norm = [&](const std::string& name, int64_t size) {
    add(name + ".weight", {size}, norm_init, false, kReplicated);
    if (c.normalization == Normalization::LayerNorm && c.add_bias_layernorm)
      add(name + ".bias", {size}, Init::Zeros, false, kReplicated);
  };
  add("embedding.word_embeddings.weight", {c.vocab_size, C}, Init::Normal, true, kRows);
  if (c.position_embedding_type == PositionEmbedding::LearnedAbsolute)
    add("embedding.position_embeddings.weight", {c.position_table_rows(), C}, Init::Normal, true, kReplicated);
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const std::string L = "decoder.layers." + std::to_string(l) + ".";
    add_norm(L + "input_layernorm", C);
    // Megatron-core's per-group layout: each query group's q heads, then its k and v.
    const int64_t qkv_rows = (heads + 2 * groups) * D;
    add(L + "self_attention.linear_qkv.weight", {qkv_rows, C}, Init::Normal, true, kRows);
    if (c.qkv_bias()) add(L + "self_attention.linear_qkv.bias", {qkv_rows}, Init::Zeros, false, kRows);
    if (c.qk_layernorm) {
      add_norm(L + "self_attention.q_layernorm", D);
      add_norm(L + "self_attention.k_layernorm", D);
    }
    add(L + "self_attention.linear_proj.weight", {C, heads * D}, Init::ScaledNormal, true, kColumns);
    if (c.add_bias_linear) add(L + "self_attention.linear_proj.bias", {C}, Init::Zeros, false, kReplicated);
    add_norm(L + "pre_mlp_layernorm", C);
    add(L + "mlp.linear_fc1.weight", {fc1_chunks * F, C}, Init::Normal, true, kRows, fc1_chunks);
    if (c.add_bias_linear) add(L + "mlp.linear_fc1.bias", {fc1_chunks * F}, Init::Zeros, false, kRows, fc1_chunks);
    add(L + "mlp.linear_fc2.weight", {C, F}, Init::ScaledNormal, true, kColumns);
    if (c.add_bias_linear) add(L + "mlp.linear_fc2.bias", {C}, Init::Zeros, false, kReplicated);
  }
  add_norm("decoder.final_layernorm", C);
  if (c.untie_embeddings_and_output_weights) add("output_layer.weight", {c.vocab_size, C}, Init::Normal, true, kRows);
  for (size_t i = 0; i < p.size(); ++i) {
    p[i].init_stream = i;
    p[i].embedding_or_output = p[i].name == "embedding.word_embeddings.weight" || p[i].name == "output_layer.weight";
  }
  if (!c.is_pipeline_stage() && c.first_layer == 0 && c.end_layer < 0) return p;
  std::vector<ParamSpec> stage;
  for (ParamSpec& s : p)
    if (on_stage(c, s.name)) stage.push_back(std::move(s));
  return stage;
}

int64_t parameter_count(const GptConfig& cfg) {
  int64_t n = 0;
  for (const auto& p : gpt_parameters(cfg)) n += graph::numel(p.full_shape);
  return n;
}

std::map<std::string, graph::Shape> parameter_shapes(const GptConfig& cfg) {
  std::map<std::string, graph::Shape> shapes;
  for (const auto& p : gpt_parameters(cfg)) shapes[p.name] = p.full_shape;
  return shapes;
}

double flops_per_token(const GptConfig& c) {
  return 6.0 * static_cast<double>(parameter_count(c)) +
         12.0 * static_cast<double>(c.num_layers * c.seq_length * c.num_attention_heads * c.head_dim());
}

AttentionChainReason attention_chain_reason(const GptConfig& c) {
  if (c.position_embedding_type == PositionEmbedding::Alibi) return AttentionChainReason::Alibi;
  if (c.reset_attention_mask) return AttentionChainReason::DocumentMask;
  return AttentionChainReason::None;
}

const char* describe(AttentionChainReason r) {
  switch (r) {
    case AttentionChainReason::None: return "";
    case AttentionChainReason::Alibi: return "ALiBi biases the scores";
    case AttentionChainReason::DocumentMask: return "--reset-attention-mask keeps attention inside each document";
  }
  return "";
}

namespace {

using Params = std::map<std::string, ValueId>;

// A parameter the configuration may leave out (biases): -1 when absent.
ValueId optional_param(const Params& p, const std::string& name) {
  auto it = p.find(name);
  return it == p.end() ? -1 : it->second;
}

// A constant in the model's compute dtype (FILL makes f32).
ValueId fill_as(Graph& g, const GptConfig& c, const graph::Shape& shape, float value) {
  ValueId v = g.fill(shape, value);
  return c.compute_dtype == KILN_F32 ? v : g.cast(v, c.compute_dtype);
}

// ALL_REDUCE carries f32 only (the op table): a 16-bit value is widened for
// the sum over the group and rounded back once, so the reduction itself is
// exact to f32 as in Megatron with --accumulate-allreduce-grads-in-fp32.
ValueId all_reduce_as(Graph& g, ValueId x, Graph::Reduction r = Graph::Reduction::Sum) {
  const kiln_dtype dtype = g.value(x).dtype;
  if (dtype == KILN_F32) return g.all_reduce(x, KILN_GROUP_TP, r);
  return g.cast(g.all_reduce(g.cast(x, KILN_F32), KILN_GROUP_TP, r), dtype);
}

// x widened to f32 (exact); x itself when it is f32.
ValueId widened(Graph& g, ValueId x) { return g.value(x).dtype == KILN_F32 ? x : g.cast(x, KILN_F32); }

// y = x W^T (+ b), with W stored [out, in] as in Megatron and PyTorch. An
// f32 x with a 16-bit W is a tensor-parallel layer's widened input
// (column_parallel_input in gpt_forward): W is widened too and the product,
// accumulated in f32 as any GEMM's, is rounded once to W's dtype, the value
// the 16-bit GEMM stores.
ValueId linear(Graph& g, ValueId x, ValueId w, ValueId b) {
  const kiln_dtype dtype = g.value(w).dtype;
  ValueId y =
      g.value(x).dtype == dtype ? g.matmul(x, w, false, true) : g.cast(g.matmul(x, widened(g, w), false, true), dtype);
  return b >= 0 ? g.add(y, b) : y;
}

// ---- FP8 (GptConfig::fp8, trainer/model/fp8_recipe.h): a layer's linear
// layers cast their GEMM's operands, and the gradient of its output.

// v cast to FP8 with the scale of tensor <name>.<role> (its own amax's
// under the tensorwise recipe).
ValueId fp8_cast(Graph& g, const GptConfig& c, const std::string& name, const char* role, ValueId v) {
  const ValueId scale = g.input(fp8_scale_port(fp8_tensor_name(name, role)), KILN_F32, {1});
  return g.cast_fp8(v, scale, c.fp8.forward, c.fp8.current).y;
}

// The GEMM's output y, whose gradient is cast to FP8 before the GEMM's
// backward reads it. Before the bias: TE computes the bias's gradient from
// the gradient as it arrives.
ValueId fp8_grad_output(Graph& g, const GptConfig& c, const std::string& name, ValueId y) {
  const ValueId scale = g.input(fp8_scale_port(fp8_tensor_name(name, "grad_output")), KILN_F32, {1});
  return g.fp8_grad_cast(y, scale, c.fp8.backward, c.fp8.current);
}

// A column-parallel layer (linear_qkv, linear_fc1): linear() of the
// parameters under `name`, on FP8 operands with --fp8-format.
ValueId column_parallel_linear(Graph& g, const GptConfig& c, ValueId x, const Params& p, const std::string& name) {
  const ValueId w = p.at(name + ".weight"), b = optional_param(p, name + ".bias");
  if (!c.fp8.enabled) return linear(g, x, w, b);
  const ValueId y = linear(g, fp8_cast(g, c, name, "input", x), fp8_cast(g, c, name, "weight", w), -1);
  return b >= 0 ? g.add(fp8_grad_output(g, c, name, y), b) : fp8_grad_output(g, c, name, y);
}

// ---- sequence parallelism (GptConfig::sequence_parallel). Hidden states
// [B*T, C] become this rank's slice of each sample's tokens, [B*T/R, C];
// the collectives move slices along the sequence dim of [B, T, C] and are
// f32 (the op table), so a 16-bit value is widened first (exact).

// This rank's slices -> whole samples, f32 [B*T, C]. ALL_GATHER's
// gradient reduce-scatters, which sums the tensor-parallel layer's input
// gradient over the group, as column_parallel_input's all-reduce does.
ValueId gather_sequence(Graph& g, const GptConfig& c, int64_t B, ValueId x) {
  const int64_t C = g.shape(x).back();
  ValueId whole =
      g.all_gather(g.reshape(widened(g, x), {B, c.local_seq_length(), C}), 1, c.tensor_parallel, KILN_GROUP_TP);
  return g.reshape(whole, {B * c.seq_length, C});
}

// Whole samples [B*T, C] f32 -> this rank's slices [B*T/R, C]: of their sum
// over the group (a row-parallel layer's partial products), or of a value
// every rank holds whole (the embedding's output).
ValueId reduce_scatter_sequence(Graph& g, const GptConfig& c, int64_t B, ValueId x) {
  const int64_t C = g.shape(x).back();
  ValueId mine = g.reduce_scatter(g.reshape(x, {B, c.seq_length, C}), 1, c.tensor_parallel, KILN_GROUP_TP);
  return g.reshape(mine, {B * c.local_seq_length(), C});
}
ValueId scatter_sequence(Graph& g, const GptConfig& c, int64_t B, ValueId x) {
  const kiln_dtype dtype = g.value(x).dtype;
  const int64_t C = g.shape(x).back();
  ValueId mine = g.scatter(g.reshape(widened(g, x), {B, c.seq_length, C}), 1, c.tensor_parallel, KILN_GROUP_TP);
  mine = g.reshape(mine, {B * c.local_seq_length(), C});
  return dtype == KILN_F32 ? mine : g.cast(mine, dtype);
}

// Megatron's row-parallel linear: each rank multiplies its slice of the
// input by its columns of W, the partial products are summed over the
// group (reduce-scattered along the sequence with sequence parallelism),
// then the (replicated) bias is added once. In 16 bits the partial
// products stay f32 (widened operands, exact) until the sum over the group
// is complete, and are rounded once: what one process's GEMM stores, up to
// the order of the f32 additions. Rounding each partial first would differ
// from one process by an occasional bf16 ulp.
//
// Under --fp8-format x and W are cast on each rank, and the gradient of the
// whole (reduced) output before it goes back to the partial products.
ValueId row_parallel_linear(Graph& g, const GptConfig& c, int64_t B, ValueId x, const Params& p,
                            const std::string& name) {
  ValueId w = p.at(name + ".weight"), b = optional_param(p, name + ".bias");
  if (c.fp8.enabled) {
    x = fp8_cast(g, c, name, "input", x);
    w = fp8_cast(g, c, name, "weight", w);
  }
  const kiln_dtype dtype = g.value(w).dtype;
  ValueId y;
  if (c.tensor_parallel == 1) {
    y = g.matmul(x, w, false, true);
  } else {
    ValueId partial =
        dtype == KILN_F32 ? g.matmul(x, w, false, true) : g.matmul(widened(g, x), widened(g, w), false, true);
    y = c.splits_sequence() ? reduce_scatter_sequence(g, c, B, partial) : g.all_reduce(partial, KILN_GROUP_TP);
    if (dtype != KILN_F32) y = g.cast(y, dtype);
  }
  if (c.fp8.enabled) y = fp8_grad_output(g, c, name, y);
  // On this rank's slice of the sequence the (replicated) bias gets that
  // slice's share of its gradient: the copy sums it over the group.
  if (b >= 0 && c.splits_sequence()) b = g.copy_to_tp_region(b, KILN_GROUP_TP);
  return b >= 0 ? g.add(y, b) : y;
}

// The --normalization of x's last dim with the parameters under `name`.
// --apply-layernorm-1p stores the weight zero-centred: the norm scales by 1 + w.
//
// `on_a_share`: x is this rank's share of the values (its heads under
// QK-LayerNorm, its slice of the sequence under sequence parallelism), so
// each replicated parameter's gradient here is that share's: it passes
// through a copy to the tensor-parallel region, whose gradient is the sum
// over the group, so every rank applies the same whole gradient.
ValueId norm(Graph& g, const GptConfig& c, Normalization kind, ValueId x, const Params& p, const std::string& name,
             bool on_a_share = false) {
  auto param = [&](const std::string& suffix) {
    const ValueId v = p.at(name + suffix);
    return on_a_share && c.tensor_parallel > 1 ? g.copy_to_tp_region(v, KILN_GROUP_TP) : v;
  };
  ValueId w = param(".weight");
  if (c.apply_layernorm_1p) w = g.add(fill_as(g, c, g.shape(w), 1.0f), w);
  if (kind == Normalization::RMSNorm) return g.rmsnorm(x, w, c.layernorm_epsilon);
  // Without a bias, beta is a constant zero: LAYERNORM with a FILL input
  // costs one fill of C floats and leaves the op, its kernels and its
  // gradient as they are (the unused dbeta is one more row sum), where an
  // op attribute or a new op would touch every backend. The fill is no
  // parameter, so no optimizer state or checkpoint tensor comes with it.
  const ValueId beta = c.add_bias_layernorm ? param(".bias") : fill_as(g, c, g.shape(w), 0.0f);
  return g.layernorm(x, w, beta, c.layernorm_epsilon);
}

// q, k and v as [B*H, T, D] on this rank's heads, from the fused QKV output
// [B*T, (H + 2G) * D] in Megatron-core's per-group layout: each query
// group's H/G q heads, then its k and v. With G = H that is GPT-2's [H, 3, D]
// per head, split as it always was (the default job's graph is unchanged).
// With fewer groups each query head attends with its group's K/V: H/G
// copies concatenated, whose gradients autodiff sums.
struct Qkv {
  ValueId q, k, v;
};
// The position inputs attention reads: rotary tables or ALiBi slopes, and
// the document starts of --reset-attention-mask (-1 when unused). With
// --reset-position-ids the rotary tables have a row per token of the
// micro-batch (per_token) instead of one per position.
struct PositionValues {
  ValueId rotary_cos = -1, rotary_sin = -1, alibi_slopes = -1, document_starts = -1;
  bool per_token = false;
};

// ROPE rotates the row at index t of dim -2 by table row t. With tables of
// a row per token (b * T + t), x [B, ..., T, D] is laid out as
// [M, B * T, D] (M: its heads) for the rotation and back: two copies each
// way, paid only under --reset-position-ids with rotary positions.
ValueId rope_of(Graph& g, ValueId x, const PositionValues& pos, bool interleaved, int64_t B) {
  if (!pos.per_token) return g.rope(x, pos.rotary_cos, pos.rotary_sin, interleaved);
  const Shape s = g.shape(x);
  const int64_t T = s[s.size() - 2], D = s.back(), M = graph::numel(s) / (B * T * D);
  ValueId y = g.permute(g.reshape(x, {B, M, T, D}), {1, 0, 2, 3});
  y = g.rope(g.reshape(y, {M, B * T, D}), pos.rotary_cos, pos.rotary_sin, interleaved);
  y = g.permute(g.reshape(y, {M, B, T, D}), {1, 0, 2, 3});
  return g.reshape(y, s);
}
Qkv split_qkv(Graph& g, const GptConfig& c, const LayerSpec& spec, int64_t B, ValueId qkv, const Params& p,
              const std::string& L, const PositionValues& pos) {
  const int64_t T = c.seq_length, H = c.local_heads(), G = c.local_query_groups(), D = c.head_dim();
  const int64_t per_group = H / G;
  ValueId q, k, v;
  if (per_group == 1) {
    qkv = g.reshape(qkv, {B, T, H, 3, D});
    qkv = g.permute(qkv, {3, 0, 2, 1, 4});  // [3, B, H, T, D]
    std::vector<ValueId> parts = g.split(qkv, 0, 3);
    q = g.reshape(parts[0], {B * H, T, D});
    k = g.reshape(parts[1], {B * H, T, D});
    v = g.reshape(parts[2], {B * H, T, D});
  } else {
    qkv = g.reshape(qkv, {B, T, G, per_group + 2, D});
    qkv = g.permute(qkv, {0, 2, 3, 1, 4});  // [B, G, per_group + 2, T, D]
    std::vector<ValueId> parts = g.split(qkv, 2, per_group + 2);
    q = g.reshape(g.concat({parts.begin(), parts.begin() + per_group}, 2), {B * H, T, D});
    k = parts[static_cast<size_t>(per_group)];  // [B, G, 1, T, D]
    v = parts[static_cast<size_t>(per_group) + 1];
  }
  if (c.qk_layernorm) {
    q = norm(g, c, spec.norm, q, p, L + "self_attention.q_layernorm", /*on_a_share=*/true);
    k = norm(g, c, spec.norm, k, p, L + "self_attention.k_layernorm", /*on_a_share=*/true);
  }
  if (spec.positions == PositionEmbedding::Rope) {
    // Megatron-core rotates q and k after the split (and QK-LayerNorm), by
    // the tables the trainer fills (trainer/model/position_inputs.h).
    q = rope_of(g, q, pos, c.rotary_interleaved, B);
    k = rope_of(g, k, pos, c.rotary_interleaved, B);
  }
  if (per_group > 1) {
    k = g.reshape(g.concat(std::vector<ValueId>(static_cast<size_t>(per_group), k), 2), {B * H, T, D});
    v = g.reshape(g.concat(std::vector<ValueId>(static_cast<size_t>(per_group), v), 2), {B * H, T, D});
  }
  return {q, k, v};
}

// The attention probabilities of scores [B*H, T, T]: causal, and within
// each token's document under --reset-attention-mask.
ValueId softmax_of(Graph& g, ValueId scores, const PositionValues& pos, int64_t B, float scale) {
  if (pos.document_starts < 0) return g.causal_softmax(scores, scale);
  const Shape s = g.shape(scores);
  const ValueId per_sample = g.reshape(scores, {B, s[0] / B, s[1], s[2]});
  return g.reshape(g.document_softmax(per_sample, pos.document_starts, scale), s);
}

// The attention core as separate ops: scores [B*H, T, T] = q k^T, the
// causal (or document) softmax with ALiBi's bias before it, dropout on the
// probabilities, then @ v.
ValueId attention_chain(Graph& g, const GptConfig& c, const LayerSpec& spec, int64_t B, ValueId q, ValueId k, ValueId v,
                        const PositionValues& pos, ValueId dropout_key, float scale) {
  const int64_t T = c.seq_length, H = c.local_heads();
  ValueId scores = g.matmul(q, k, false, true);  // [B*H, T, T]
  ValueId probs;
  if (spec.positions == PositionEmbedding::Alibi) {
    // MPT: the bias is added to the scaled scores, so scale first and
    // softmax with scale 1. Each rank's slopes are those of its heads.
    scores = g.reshape(g.scale(scores, scale), {B, H, T, T});
    scores = g.reshape(g.alibi(scores, pos.alibi_slopes), {B * H, T, T});
    probs = softmax_of(g, scores, pos, B, 1.0f);
  } else {
    probs = softmax_of(g, scores, pos, B, scale);
  }
  if (c.attention_dropout > 0.0f)
    probs = g.dropout_keyed(probs, dropout_key, c.attention_dropout, H * T * T, c.num_attention_heads * T * T);
  return g.matmul(probs, v);
}

// Causal self-attention over x [B*T, C], on this rank's heads (whole query
// groups), so the tensor-parallel split of the fused QKV rows keeps each
// group's q, k and v together.
ValueId attention(Graph& g, const GptConfig& c, const LayerSpec& spec, int64_t B, ValueId x, const Params& p,
                  const std::string& L, const PositionValues& pos, ValueId dropout_key, int64_t layer,
                  std::vector<graph::RecomputeSegment>& recompute_segments) {
  const int64_t T = c.seq_length, H = c.local_heads(), D = c.head_dim();
  ValueId qkv = column_parallel_linear(g, c, x, p, L + "self_attention.linear_qkv");
  // MPT's QKV clipping (kiln extension): every q, k and v element within [-x, x].
  if (c.clip_qkv > 0.0f) qkv = g.clamp(qkv, -c.clip_qkv, c.clip_qkv);
  const Qkv h = split_qkv(g, c, spec, B, qkv, p, L, pos);
  // Query-key layer scaling: q / l makes the stored scores q k^T / l; the
  // softmax's (or ALiBi's) scale multiplies l back.
  const float coeff = c.query_key_layer_scaling && c.compute_dtype != KILN_F32 ? static_cast<float>(layer + 1) : 1.0f;
  const ValueId q = coeff > 1.0f ? g.scale(h.q, 1.0f / coeff) : h.q;
  // Megatron's selective recomputation: the core (scores, softmax, dropout,
  // @V), whose [B*H, T, T] values dominate a layer's activations, is
  // recomputed from q, k and v.
  const int core_begin = static_cast<int>(g.nodes().size());
  const float scale = coeff / std::sqrt(static_cast<float>(D));
  // The fused core (GptConfig::fused_attention) where it is the causal one,
  // with the chain's dropout mask where it has one.
  ValueId y;  // [B*H, T, D]
  if (!c.fused_attention || attention_chain_reason(c) != AttentionChainReason::None)
    y = attention_chain(g, c, spec, B, q, h.k, h.v, pos, dropout_key, scale);
  else if (c.attention_dropout > 0.0f)
    y = g.attention_dropout(q, h.k, h.v, dropout_key, scale, c.attention_dropout, H * T * T,
                            c.num_attention_heads * T * T);
  else
    y = g.attention(q, h.k, h.v, scale);
  if (c.recompute_granularity == RecomputeGranularity::Selective)
    recompute_segments.push_back({core_begin, static_cast<int>(g.nodes().size())});
  y = g.reshape(y, {B, H, T, D});
  y = g.permute(y, {0, 2, 1, 3});  // [B, T, H, D]
  y = g.reshape(y, {B * T, H * D});
  return row_parallel_linear(g, c, B, y, p, L + "self_attention.linear_proj");
}

// The MLP's middle parts (layer_spec.h's MlpKind): fc1's output -> fc2's input.
ValueId gelu_part(Graph& g, ValueId h) { return g.gelu(h); }
ValueId gelu_erf_part(Graph& g, ValueId h) { return g.gelu_erf(h); }
ValueId squared_relu_part(Graph& g, ValueId h) { return g.squared_relu(h); }
// This rank's fc1 rows are its rows of the gate, then its rows of up
// (ParamSpec::shard_chunks), so its output columns split the same way.
ValueId swiglu_part(Graph& g, ValueId h) {
  std::vector<ValueId> gate_up = g.split(h, 1, 2);
  return g.mul(g.silu(gate_up[0]), gate_up[1]);
}
using MlpPart = ValueId (*)(Graph&, ValueId);
MlpPart mlp_part(MlpKind kind) {
  switch (kind) {
    case MlpKind::Gelu: return gelu_part;
    case MlpKind::GeluErf: return gelu_erf_part;
    case MlpKind::SquaredRelu: return squared_relu_part;
    case MlpKind::SwiGlu: return swiglu_part;
  }
  throw Error("internal: MLP kind " + std::to_string(static_cast<int>(kind)));
}

// fc1 column-parallel, fc2 row-parallel: the middle part applies to each
// rank's columns on their own, so the MLP needs one all-reduce.
ValueId mlp(Graph& g, const GptConfig& c, MlpKind kind, int64_t B, ValueId x, const Params& p, const std::string& L) {
  ValueId h = column_parallel_linear(g, c, x, p, L + "mlp.linear_fc1");
  h = mlp_part(kind)(g, h);
  return row_parallel_linear(g, c, B, h, p, L + "mlp.linear_fc2");
}

// Where layer l stands in full recomputation's units (Megatron's
// transformer_block.py, counting the stage's layers from 0): uniform groups
// of recompute_num_layers layers (the last group may be shorter), or, with
// block, each of the first recompute_num_layers layers on its own.
struct RecomputeUnit {
  bool starts = false, ends = false;
};
RecomputeUnit full_recompute_unit(const GptConfig& c, int64_t l) {
  if (c.recompute_granularity != RecomputeGranularity::Full) return {};
  const int64_t i = l - c.first_layer, n = c.recompute_num_layers;
  if (c.recompute_method == RecomputeMethod::Block) return {i < n, i < n};
  return {i % n == 0, i % n == n - 1 || l + 1 == c.stage_end()};
}

// The forward's parts in the order they add nodes (the order is part of
// the graph, so of its hash and cache key): the embedding, the dropout keys,
// the position inputs, each layer, then the head or the stage's hand-on.
class ForwardBuilder {
 public:
  ForwardBuilder(Graph& g, const GptConfig& c, int64_t B) : g_(g), c_(c), spec_(layer_spec(c)), B_(B) {
    for (const ParamSpec& s : gpt_parameters(c)) {
      const ValueId main = g.input(s.name, KILN_F32, s.shape);
      f_.param_inputs[s.name] = main;
      // Megatron's mixed precision: the model's copy of each main parameter.
      f_.params[s.name] = c.compute_dtype == KILN_F32 ? main : g.cast(main, c.compute_dtype);
    }
    // The word embedding: on the first stage, and on the last with a tied LM head.
    const auto words = f_.params.find("embedding.word_embeddings.weight");
    words_ = words == f_.params.end() ? -1 : words->second;
  }

  // The first stage's embedding of "tokens", or a later stage's "hidden_in":
  // [B*T, C] (this rank's slice of the sequence with sequence parallelism).
  ValueId embed();
  // The first stage drops out its embedding.
  ValueId embedding_dropout(ValueId x);
  void declare_position_inputs();
  ValueId layer(ValueId x, int64_t l);
  // The last stage: the final norm and the LM head's logits. Any other: the
  // hidden states it hands on, f32.
  GptForward finish(ValueId x);

 private:
  ValueId column_parallel_input(ValueId v);
  ValueId hidden_dropout(ValueId v, int64_t site);
  ValueId dropout_key(int64_t site);

  Graph& g_;
  const GptConfig& c_;
  const LayerSpec spec_;  // the parts each layer is assembled from
  const int64_t B_;
  GptForward f_;
  ValueId words_ = -1;
  PositionValues pos_;
  int unit_begin_ = 0;  // the first node of the layers recomputed together (full granularity)
};

// A column-parallel layer's input: each rank uses all of it with part of
// the weights, so its gradient is the sum of every rank's part. In 16 bits
// the layer reads it widened to f32 (linear), so each rank's part of the
// gradient stays f32 until the sum over the group is complete and is
// rounded once, by the widening CAST's gradient, as in one process.
//
// With sequence parallelism it is gathered from the ranks' slices, and
// ALL_GATHER's gradient sums it over the group. Any other use of v (a
// post-norm residual) keeps its own gradient, not summed.
ValueId ForwardBuilder::column_parallel_input(ValueId v) {
  if (c_.tensor_parallel == 1) return v;
  if (c_.splits_sequence()) return gather_sequence(g_, c_, B_, v);
  return g_.copy_to_tp_region(widened(g_, v), KILN_GROUP_TP);
}

// On a slice of the sequence, element e of the [B, T/R, C] slice is element
// (e / (T/R*C)) * T*C + e % (T/R*C) + the key's offset of the whole
// [B, T, C] (docs/DROPOUT.md), so the masks are one process's.
ValueId ForwardBuilder::hidden_dropout(ValueId v, int64_t site) {
  if (c_.hidden_dropout <= 0.0f) return v;
  const int64_t C = c_.hidden_size;
  if (c_.splits_sequence())
    return g_.dropout_keyed(v, dropout_key(site), c_.hidden_dropout, c_.local_seq_length() * C, c_.seq_length * C);
  return g_.dropout_keyed(v, dropout_key(site), c_.hidden_dropout);
}

// A site's key is an input the trainer fills per micro-batch, so the graph
// stays the same from step to step, and the site is in the key, not the
// graph, so every layer's graph is the same (trainer/model/dropout_keys.h).
ValueId ForwardBuilder::dropout_key(int64_t site) { return g_.input(dropout_key_input(site), KILN_I32, {5}); }

ValueId ForwardBuilder::embed() {
  const int64_t T = c_.seq_length, C = c_.hidden_size;
  ValueId x;
  if (!c_.pre_process) {
    // A later pipeline stage starts from the previous stage's output. Stages
    // hand f32 to each other (the schedule's buffers are float); a 16-bit
    // value and its gradient survive the round trip exactly.
    f_.hidden_in = x = g_.input(kHiddenIn, KILN_F32, {B_ * c_.local_seq_length(), C});
    return c_.compute_dtype == KILN_F32 ? x : g_.cast(x, c_.compute_dtype);
  }
  f_.tokens = g_.input("tokens", KILN_I32, {B_, T});
  if (c_.tensor_parallel == 1) {
    x = g_.embedding(words_, f_.tokens);  // [B, T, C]
  } else {
    // Vocab-parallel, as Megatron: ids of other shards arrive as row 0 with
    // a 0 in "token_mask" (shard_input_ids), so each token's row survives
    // on exactly one rank and the sum over the group holds it once. MUL
    // broadcasts over leading dims, hence the mask multiplies the rows
    // transposed.
    f_.token_mask = g_.input("token_mask", KILN_F32, {B_ * T});
    const ValueId mask = c_.compute_dtype == KILN_F32 ? f_.token_mask : g_.cast(f_.token_mask, c_.compute_dtype);
    ValueId rows = g_.reshape(g_.embedding(words_, f_.tokens), {B_ * T, C});
    rows = g_.permute(g_.mul(g_.permute(rows, {1, 0}), mask), {1, 0});
    x = all_reduce_as(g_, g_.reshape(rows, {B_, T, C}));
  }
  if (spec_.positions == PositionEmbedding::LearnedAbsolute) {
    ValueId table = f_.params.at("embedding.position_embeddings.weight");
    // A table larger than the sequence (--max-position-embeddings): its
    // first T rows, looked up by the ids 0..T-1, so the gradient of the
    // rows in use is the same as the whole table's and the others get 0.
    if (c_.reset_position_ids)  // each sample's own positions, [B, T, C]
      table = g_.embedding(table, g_.input(kDocumentPositionsInput, KILN_I32, {B_, T}));
    else if (c_.position_table_rows() > T)
      table = g_.embedding(table, g_.input(kPositionIdsInput, KILN_I32, {T}));
    x = g_.add(x, table);  // broadcast over B without reset positions
  }
  x = g_.reshape(x, {B_ * T, C});
  // Megatron scatters the embedding's output to the sequence-parallel
  // region (reduce-scatters it without learned positions: the same values).
  return c_.splits_sequence() ? scatter_sequence(g_, c_, B_, x) : x;
}

ValueId ForwardBuilder::embedding_dropout(ValueId x) {
  return c_.pre_process ? hidden_dropout(x, embedding_dropout_site()) : x;
}

void ForwardBuilder::declare_position_inputs() {
  const int64_t T = c_.seq_length;
  if (spec_.positions == PositionEmbedding::Rope && c_.reset_position_ids) {
    pos_.per_token = true;
    pos_.rotary_cos = g_.input(kDocumentRotaryCosInput, KILN_F32, {B_ * T, c_.rotary_pairs()});
    pos_.rotary_sin = g_.input(kDocumentRotarySinInput, KILN_F32, {B_ * T, c_.rotary_pairs()});
  } else if (spec_.positions == PositionEmbedding::Rope) {
    pos_.rotary_cos = g_.input(kRotaryCosInput, KILN_F32, {T, c_.rotary_pairs()});
    pos_.rotary_sin = g_.input(kRotarySinInput, KILN_F32, {T, c_.rotary_pairs()});
  }
  if (c_.reset_attention_mask) pos_.document_starts = g_.input(kDocumentStartsInput, KILN_I32, {B_, T});
  if (spec_.positions == PositionEmbedding::Alibi)
    pos_.alibi_slopes = g_.input(kAlibiSlopesInput, KILN_F32, {c_.local_heads()});
}

// Megatron-core's TransformerLayer: x + attention(norm(x)), then the same
// with the MLP; with --apply-residual-connection-post-layernorm each
// residual starts from the norm's output instead (Megatron's legacy layer:
// norm(x) + attention(norm(x))). Each layer is a compile unit of its own
// (graph/compile_units.h).
ValueId ForwardBuilder::layer(ValueId x, int64_t l) {
  const RecomputeUnit unit = full_recompute_unit(c_, l);
  if (unit.starts) unit_begin_ = static_cast<int>(g_.nodes().size());
  const std::string L = "decoder.layers." + std::to_string(l) + ".";
  g_.set_unit(graph::layer_forward_unit(l));
  ValueId h = norm(g_, c_, spec_.norm, x, f_.params, L + "input_layernorm", c_.splits_sequence());
  const bool post_norm = c_.apply_residual_connection_post_layernorm;
  const ValueId probs_key = c_.attention_dropout > 0.0f ? dropout_key(attention_probs_dropout_site(l)) : -1;
  ValueId out =
      attention(g_, c_, spec_, B_, column_parallel_input(h), f_.params, L, pos_, probs_key, l, f_.recompute_segments);
  x = g_.add(post_norm ? h : x, hidden_dropout(out, attention_output_dropout_site(l)));
  h = norm(g_, c_, spec_.norm, x, f_.params, L + "pre_mlp_layernorm", c_.splits_sequence());
  out = mlp(g_, c_, spec_.mlp, B_, column_parallel_input(h), f_.params, L);
  x = g_.add(post_norm ? h : x, hidden_dropout(out, mlp_output_dropout_site(l)));
  if (unit.ends) f_.recompute_segments.push_back({unit_begin_, static_cast<int>(g_.nodes().size())});
  g_.set_unit(graph::kRestUnit);
  return x;
}

GptForward ForwardBuilder::finish(ValueId x) {
  if (!c_.post_process) {
    f_.hidden_out = c_.compute_dtype == KILN_F32 ? x : g_.cast(x, KILN_F32);
    return f_;
  }
  x = norm(g_, c_, spec_.norm, x, f_.params, "decoder.final_layernorm", c_.splits_sequence());
  // The LM head: this rank's vocab rows of the token embedding (tied) or of
  // the output layer.
  ValueId head = c_.untie_embeddings_and_output_weights ? f_.params.at("output_layer.weight") : words_;
  // A tied 16-bit head reads a CAST of its own: each use's gradient then
  // comes back to f32 and the two are summed there, in the same order of
  // operations as when two pipeline stages hold the two uses, rather than
  // summed in 16 bits first.
  if (head == words_ && c_.pre_process && c_.compute_dtype != KILN_F32)
    head = g_.cast(f_.param_inputs.at("embedding.word_embeddings.weight"), c_.compute_dtype);
  f_.logits = linear(g_, column_parallel_input(x), head, -1);
  return f_;
}

}  // namespace

GptForward build_gpt_forward(Graph& g, const GptConfig& c, int64_t B) {
  c.validate();
  if (!kiln_dtype_is_float(c.compute_dtype))
    throw Error(std::string("internal: the model's compute dtype must be a float, got ") +
                kiln_dtype_name(c.compute_dtype));
  ForwardBuilder forward(g, c, B);
  ValueId x = forward.embedding_dropout(forward.embed());
  forward.declare_position_inputs();
  for (int64_t l = c.first_layer; l < c.stage_end(); ++l) x = forward.layer(x, l);
  return forward.finish(x);
}

namespace {
// --eod-mask-loss: sum over tokens of weight * loss, the weights being the
// host's loss_mask / loss_mask.sum() (kLossWeightsInput). Each token's loss
// is log(sum exp(logits - max)) - (logit of its target - max), from the
// vocab-parallel pieces (summed over the group with tensor parallelism).
ValueId masked_mean_cross_entropy(Graph& g, const GptConfig& c, ValueId logits, ValueId targets, int64_t N) {
  const bool tp = c.tensor_parallel > 1;
  ValueId rowmax = g.row_max(logits);
  if (tp) rowmax = all_reduce_as(g, rowmax, Graph::Reduction::Max);
  ValueId sums = g.cross_entropy_shard(logits, targets, rowmax);  // [N, 2] f32
  if (tp) sums = g.all_reduce(sums, KILN_GROUP_TP);
  const std::vector<ValueId> parts = g.split(sums, 1, 2);  // [N, 1] each
  const ValueId per_token = g.add(g.log(parts[0]), g.scale(parts[1], -1.0f));
  return g.sum_to(g.mul(per_token, g.input(kLossWeightsInput, KILN_F32, {N, 1})), {1});
}
}  // namespace

ValueId gpt_loss(Graph& g, const GptForward& f, const GptConfig& c, int64_t B) {
  ValueId targets = g.reshape(g.input("targets", KILN_I32, {B, c.seq_length}), {B * c.seq_length});
  if (c.eod_mask_loss) return masked_mean_cross_entropy(g, c, f.logits, targets, B * c.seq_length);
  if (c.tensor_parallel == 1) return g.cross_entropy(f.logits, targets);
  // Megatron's vocab-parallel cross-entropy: the row max over the whole
  // vocab, then each shard's sum of exp and target logit, summed.
  ValueId rowmax = all_reduce_as(g, g.row_max(f.logits), Graph::Reduction::Max);
  ValueId sums = g.all_reduce(g.cross_entropy_shard(f.logits, targets, rowmax), KILN_GROUP_TP);
  return g.cross_entropy_from_sums(sums);
}

}  // namespace kiln::trainer
