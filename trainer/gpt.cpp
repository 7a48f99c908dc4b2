#include "trainer/gpt.h"

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
}

std::vector<ParamSpec> gpt_parameters(const GptConfig& c) {
  using Init = ParamSpec::Init;
  const int64_t C = c.hidden_size, F = c.ffn_hidden_size();
  std::vector<ParamSpec> p;
  p.push_back({"embedding.word_embeddings.weight", {c.vocab_size, C}, Init::Normal, true});
  p.push_back({"embedding.position_embeddings.weight", {c.seq_length, C}, Init::Normal, true});
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const std::string L = "decoder.layers." + std::to_string(l) + ".";
    p.push_back({L + "input_layernorm.weight", {C}, Init::Ones, false});
    p.push_back({L + "input_layernorm.bias", {C}, Init::Zeros, false});
    p.push_back({L + "self_attention.linear_qkv.weight", {3 * C, C}, Init::Normal, true});
    p.push_back({L + "self_attention.linear_qkv.bias", {3 * C}, Init::Zeros, false});
    p.push_back({L + "self_attention.linear_proj.weight", {C, C}, Init::ScaledNormal, true});
    p.push_back({L + "self_attention.linear_proj.bias", {C}, Init::Zeros, false});
    p.push_back({L + "pre_mlp_layernorm.weight", {C}, Init::Ones, false});
    p.push_back({L + "pre_mlp_layernorm.bias", {C}, Init::Zeros, false});
    p.push_back({L + "mlp.linear_fc1.weight", {F, C}, Init::Normal, true});
    p.push_back({L + "mlp.linear_fc1.bias", {F}, Init::Zeros, false});
    p.push_back({L + "mlp.linear_fc2.weight", {C, F}, Init::ScaledNormal, true});
    p.push_back({L + "mlp.linear_fc2.bias", {C}, Init::Zeros, false});
  }
  p.push_back({"decoder.final_layernorm.weight", {C}, Init::Ones, false});
  p.push_back({"decoder.final_layernorm.bias", {C}, Init::Zeros, false});
  return p;
}

int64_t parameter_count(const GptConfig& cfg) {
  int64_t n = 0;
  for (const auto& p : gpt_parameters(cfg)) n += graph::numel(p.shape);
  return n;
}

double flops_per_token(const GptConfig& c) {
  return 6.0 * static_cast<double>(parameter_count(c)) +
         12.0 * static_cast<double>(c.num_layers * c.seq_length * c.hidden_size);
}

namespace {

// y = x W^T + b, with W stored [out, in] as in Megatron and PyTorch.
ValueId linear(Graph& g, ValueId x, ValueId w, ValueId b) { return g.add(g.matmul(x, w, false, true), b); }

// Causal self-attention over x [B*T, C]. The fused QKV projection is laid
// out per head as [H, 3, D] (Megatron's order), so a tensor-parallel split
// along the output dim keeps each head's q, k and v together.
ValueId attention(Graph& g, const GptConfig& c, int64_t B, ValueId x, const std::map<std::string, ValueId>& p,
                  const std::string& L) {
  const int64_t T = c.seq_length, H = c.num_attention_heads, D = c.head_dim(), C = c.hidden_size;
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
  return linear(g, y, p.at(L + "self_attention.linear_proj.weight"), p.at(L + "self_attention.linear_proj.bias"));
}

ValueId mlp(Graph& g, ValueId x, const std::map<std::string, ValueId>& p, const std::string& L) {
  ValueId h = linear(g, x, p.at(L + "mlp.linear_fc1.weight"), p.at(L + "mlp.linear_fc1.bias"));
  h = g.gelu(h);
  return linear(g, h, p.at(L + "mlp.linear_fc2.weight"), p.at(L + "mlp.linear_fc2.bias"));
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

  ValueId x = g.embedding(p.at("embedding.word_embeddings.weight"), f.tokens);  // [B, T, C]
  x = g.add(x, p.at("embedding.position_embeddings.weight"));                   // broadcast over B
  x = g.reshape(x, {B * T, C});
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const std::string L = "decoder.layers." + std::to_string(l) + ".";
    ValueId h = g.layernorm(x, p.at(L + "input_layernorm.weight"), p.at(L + "input_layernorm.bias"), eps);
    x = g.add(x, attention(g, c, B, h, p, L));
    h = g.layernorm(x, p.at(L + "pre_mlp_layernorm.weight"), p.at(L + "pre_mlp_layernorm.bias"), eps);
    x = g.add(x, mlp(g, h, p, L));
  }
  x = g.layernorm(x, p.at("decoder.final_layernorm.weight"), p.at("decoder.final_layernorm.bias"), eps);
  f.logits = g.matmul(x, p.at("embedding.word_embeddings.weight"), false, true);  // tied LM head
  return f;
}

}  // namespace kiln::trainer
