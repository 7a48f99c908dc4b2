#include "trainer/model/gpt.h"

#include <cmath>

#include "core/error.h"

namespace kiln::trainer {

using graph::Graph;
using graph::ValueId;

void GptConfig::validate() const {
  auto positive = [](int64_t v, const char* flag) {
    if (v <= 0) throw Error(std::string(flag) + " must be positive, got " + std::to_string(v));
  };
  positive(num_layers, "--num-layers");
  positive(hidden_size, "--hidden-size");
  positive(num_attention_heads, "--num-attention-heads");
  positive(vocab_size, "--vocab-size");
  positive(seq_length, "--seq-length");
  if (hidden_size % num_attention_heads != 0)
    throw Error("--num-attention-heads " + std::to_string(num_attention_heads) + " does not divide --hidden-size " +
                std::to_string(hidden_size) + "; pick a head count that divides the hidden size");
  positive(tensor_parallel, "--tensor-model-parallel-size");
  const std::string tp = " is not divisible by --tensor-model-parallel-size " + std::to_string(tensor_parallel);
  if (num_attention_heads % tensor_parallel != 0)
    throw Error("--num-attention-heads " + std::to_string(num_attention_heads) + tp +
                "; each tensor-parallel rank holds whole heads");
  if (vocab_size % tensor_parallel != 0)
    throw Error("--vocab-size " + std::to_string(vocab_size) + tp +
                "; pick a multiple (with --vocab-file, kiln pads the vocab like Megatron)");
}

std::vector<ParamSpec> gpt_parameters(const GptConfig& c) {
  using Init = ParamSpec::Init;
  const int64_t C = c.hidden_size, F = c.ffn_hidden_size();
  constexpr int kRows = 0, kColumns = 1, kReplicated = -1;
  std::vector<ParamSpec> p;
  auto add = [&](std::string name, const graph::Shape& shape, Init init, bool decay, int shard_dim) {
    p.push_back({std::move(name), shape, init, decay, shard_dim, shape});
    if (shard_dim >= 0) p.back().shape[static_cast<size_t>(shard_dim)] /= c.tensor_parallel;
  };
  add("embedding.word_embeddings.weight", {c.vocab_size, C}, Init::Normal, true, kRows);
  add("embedding.position_embeddings.weight", {c.seq_length, C}, Init::Normal, true, kReplicated);
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const std::string L = "decoder.layers." + std::to_string(l) + ".";
    add(L + "input_layernorm.weight", {C}, Init::Ones, false, kReplicated);
    add(L + "input_layernorm.bias", {C}, Init::Zeros, false, kReplicated);
    add(L + "self_attention.linear_qkv.weight", {3 * C, C}, Init::Normal, true, kRows);
    add(L + "self_attention.linear_qkv.bias", {3 * C}, Init::Zeros, false, kRows);
    add(L + "self_attention.linear_proj.weight", {C, C}, Init::ScaledNormal, true, kColumns);
    add(L + "self_attention.linear_proj.bias", {C}, Init::Zeros, false, kReplicated);
    add(L + "pre_mlp_layernorm.weight", {C}, Init::Ones, false, kReplicated);
    add(L + "pre_mlp_layernorm.bias", {C}, Init::Zeros, false, kReplicated);
    add(L + "mlp.linear_fc1.weight", {F, C}, Init::Normal, true, kRows);
    add(L + "mlp.linear_fc1.bias", {F}, Init::Zeros, false, kRows);
    add(L + "mlp.linear_fc2.weight", {C, F}, Init::ScaledNormal, true, kColumns);
    add(L + "mlp.linear_fc2.bias", {C}, Init::Zeros, false, kReplicated);
  }
  add("decoder.final_layernorm.weight", {C}, Init::Ones, false, kReplicated);
  add("decoder.final_layernorm.bias", {C}, Init::Zeros, false, kReplicated);
  return p;
}

int64_t parameter_count(const GptConfig& cfg) {
  int64_t n = 0;
  for (const auto& p : gpt_parameters(cfg)) n += graph::numel(p.full_shape);
  return n;
}

double flops_per_token(const GptConfig& c) {
  return 6.0 * static_cast<double>(parameter_count(c)) +
         12.0 * static_cast<double>(c.num_layers * c.seq_length * c.hidden_size);
}

namespace {

// y = x W^T + b, with W stored [out, in] as in Megatron and PyTorch.
ValueId linear(Graph& g, ValueId x, ValueId w, ValueId b) { return g.add(g.matmul(x, w, false, true), b); }

// Megatron's row-parallel linear: each rank multiplies its slice of the
// input by its columns of W, the partial products are summed over the
// group, then the (replicated) bias is added once.
ValueId row_parallel_linear(Graph& g, const GptConfig& c, ValueId x, ValueId w, ValueId b) {
  ValueId y = g.matmul(x, w, false, true);
  if (c.tensor_parallel > 1) y = g.all_reduce(y);
  return g.add(y, b);
}

// Causal self-attention over x [B*T, C], on this rank's heads. The fused
// QKV projection is laid out per head as [H, 3, D] (Megatron's order), so
// the tensor-parallel split along its output dim keeps each head's q, k and
// v together.
ValueId attention(Graph& g, const GptConfig& c, int64_t B, ValueId x, const std::map<std::string, ValueId>& p,
                  const std::string& L) {
  const int64_t T = c.seq_length, H = c.local_heads(), D = c.head_dim(), C = H * D;
  ValueId qkv = linear(g, x, p.at(L + "self_attention.linear_qkv.weight"), p.at(L + "self_attention.linear_qkv.bias"));
  qkv = g.reshape(qkv, {B, T, H, 3, D});
  qkv = g.permute(qkv, {3, 0, 2, 1, 4});  // [3, B, H, T, D]
  std::vector<ValueId> parts = g.split(qkv, 0, 3);
  ValueId q = g.reshape(parts[0], {B * H, T, D});
  ValueId k = g.reshape(parts[1], {B * H, T, D});
  ValueId v = g.reshape(parts[2], {B * H, T, D});
  ValueId scores = g.matmul(q, k, false, true);  // [B*H, T, T]
  ValueId probs = g.causal_softmax(scores, 1.0f / std::sqrt(static_cast<float>(D)));
  ValueId y = g.matmul(probs, v);  // [B*H, T, D]
  y = g.reshape(y, {B, H, T, D});
  y = g.permute(y, {0, 2, 1, 3});  // [B, T, H, D]
  y = g.reshape(y, {B * T, C});
  return row_parallel_linear(g, c, y, p.at(L + "self_attention.linear_proj.weight"),
                             p.at(L + "self_attention.linear_proj.bias"));
}

// fc1 column-parallel, fc2 row-parallel: GELU applies to each rank's
// columns on their own, so the MLP needs one all-reduce.
ValueId mlp(Graph& g, const GptConfig& c, ValueId x, const std::map<std::string, ValueId>& p, const std::string& L) {
  ValueId h = linear(g, x, p.at(L + "mlp.linear_fc1.weight"), p.at(L + "mlp.linear_fc1.bias"));
  h = g.gelu(h);
  return row_parallel_linear(g, c, h, p.at(L + "mlp.linear_fc2.weight"), p.at(L + "mlp.linear_fc2.bias"));
}

}  // namespace

GptForward build_gpt_forward(Graph& g, const GptConfig& c, int64_t B) {
  c.validate();
  const int64_t T = c.seq_length, C = c.hidden_size;
  GptForward f;
  for (const ParamSpec& s : gpt_parameters(c)) f.params[s.name] = g.input(s.name, KILN_F32, s.shape);
  f.tokens = g.input("tokens", KILN_I32, {B, T});
  const auto& p = f.params;
  const float eps = c.layernorm_epsilon;

  const bool parallel = c.tensor_parallel > 1;
  // A column-parallel layer's input: each rank uses all of it with part of
  // the weights, so its gradient is the sum of every rank's part.
  auto column_parallel_input = [&](ValueId v) {
    if (parallel) f.all_reduce_gradient_of.insert(v);
    return v;
  };

  ValueId words = p.at("embedding.word_embeddings.weight");
  ValueId x;
  if (!parallel) {
    x = g.embedding(words, f.tokens);  // [B, T, C]
  } else {
    // Vocab-parallel, as Megatron: ids of other shards arrive as row 0 with
    // a 0 in "token_mask" (shard_input_ids), so each token's row survives
    // on exactly one rank and the sum over the group holds it once. MUL
    // broadcasts over leading dims, hence the mask multiplies the rows
    // transposed.
    f.token_mask = g.input("token_mask", KILN_F32, {B * T});
    ValueId rows = g.reshape(g.embedding(words, f.tokens), {B * T, C});
    rows = g.permute(g.mul(g.permute(rows, {1, 0}), f.token_mask), {1, 0});
    x = g.all_reduce(g.reshape(rows, {B, T, C}));
  }
  x = g.add(x, p.at("embedding.position_embeddings.weight"));  // broadcast over B
  x = g.reshape(x, {B * T, C});
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const std::string L = "decoder.layers." + std::to_string(l) + ".";
    ValueId h = g.layernorm(x, p.at(L + "input_layernorm.weight"), p.at(L + "input_layernorm.bias"), eps);
    x = g.add(x, attention(g, c, B, column_parallel_input(h), p, L));
    h = g.layernorm(x, p.at(L + "pre_mlp_layernorm.weight"), p.at(L + "pre_mlp_layernorm.bias"), eps);
    x = g.add(x, mlp(g, c, column_parallel_input(h), p, L));
  }
  x = g.layernorm(x, p.at("decoder.final_layernorm.weight"), p.at("decoder.final_layernorm.bias"), eps);
  f.logits = g.matmul(column_parallel_input(x), words, false, true);  // tied LM head, this rank's vocab columns
  return f;
}

ValueId gpt_loss(Graph& g, const GptForward& f, const GptConfig& c, int64_t B) {
  ValueId targets = g.reshape(g.input("targets", KILN_I32, {B, c.seq_length}), {B * c.seq_length});
  if (c.tensor_parallel == 1) return g.cross_entropy(f.logits, targets);
  // Megatron's vocab-parallel cross-entropy: the row max over the whole
  // vocab, then each shard's sum of exp and target logit, summed.
  ValueId rowmax = g.all_reduce(g.row_max(f.logits), Graph::Reduction::Max);
  ValueId sums = g.all_reduce(g.cross_entropy_shard(f.logits, targets, rowmax));
  return g.cross_entropy_from_sums(sums);
}

}  // namespace kiln::trainer
