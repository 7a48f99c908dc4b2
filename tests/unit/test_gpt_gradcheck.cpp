// The whole model, not just single ops: the gradient autodiff derives for a
// 2-layer GPT must match central finite differences of the loss, evaluated
// by the reference interpreter, for a sample of parameter elements.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "graph/autodiff.h"
#include "graph/reference/reference.h"
#include "trainer/model/gpt.h"
#include "trainer/model/position_inputs.h"

namespace kiln {
namespace {

using graph::HostTensor;
using trainer::GptConfig;

GptConfig two_layers() {
  GptConfig cfg;
  cfg.num_layers = 2;
  cfg.hidden_size = 16;
  cfg.num_attention_heads = 2;
  cfg.vocab_size = 29;  // not a multiple of anything
  cfg.seq_length = 7;
  return cfg;
}

void check_gradients(const GptConfig& cfg) {
  const int64_t B = 2;

  graph::Graph g;
  trainer::GptForward f = trainer::build_gpt_forward(g, cfg, B);
  graph::ValueId targets = g.input("targets", KILN_I32, {B * cfg.seq_length});
  graph::ValueId loss = g.cross_entropy(f.logits, targets);
  g.output("loss", loss);

  std::vector<trainer::ParamSpec> specs = trainer::gpt_parameters(cfg);
  std::vector<graph::ValueId> wrt;
  for (const auto& s : specs) wrt.push_back(f.params.at(s.name));
  std::vector<graph::ValueId> grads = graph::backward(g, loss, wrt);
  for (size_t i = 0; i < specs.size(); ++i) g.output("grad." + specs[i].name, grads[i]);

  // Larger-than-usual init so every path carries signal.
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.0f, 0.3f);
  graph::TensorMap inputs;
  for (const auto& s : specs) {
    HostTensor t = HostTensor::zeros(KILN_F32, s.shape);
    for (float& x : t.f32) x = normal(rng);
    if (s.init == trainer::ParamSpec::Init::Ones)
      for (float& x : t.f32) x += 1.0f;
    inputs[s.name] = t;
  }
  HostTensor tokens = HostTensor::zeros(KILN_I32, {B, cfg.seq_length});
  HostTensor tgt = HostTensor::zeros(KILN_I32, {B * cfg.seq_length});
  for (auto& x : tokens.i32) x = static_cast<int32_t>(rng() % static_cast<uint32_t>(cfg.vocab_size));
  for (auto& x : tgt.i32) x = static_cast<int32_t>(rng() % static_cast<uint32_t>(cfg.vocab_size));
  inputs["tokens"] = tokens;
  inputs["targets"] = tgt;
  for (const auto& [name, input] : trainer::position_inputs(cfg, 0)) {
    HostTensor t = HostTensor::zeros(KILN_F32, input.shape);
    t.f32 = input.values;
    inputs[name] = t;
  }

  graph::TensorMap out = graph::run_reference(g, inputs);
  auto loss_at = [&](const graph::TensorMap& in) {
    return static_cast<double>(graph::run_reference(g, in).at("loss").f32[0]);
  };

  int checked = 0;
  for (const auto& s : specs) {
    const HostTensor& grad = out.at("grad." + s.name);
    // Three elements per tensor: first, last and one in the middle.
    const int64_t n = grad.numel();
    for (int64_t idx : {int64_t{0}, n / 2, n - 1}) {
      const double eps = 1e-2;
      graph::TensorMap plus = inputs, minus = inputs;
      plus[s.name].f32[static_cast<size_t>(idx)] += static_cast<float>(eps);
      minus[s.name].f32[static_cast<size_t>(idx)] -= static_cast<float>(eps);
      const double numeric = (loss_at(plus) - loss_at(minus)) / (2 * eps);
      const double analytic = grad.f32[static_cast<size_t>(idx)];
      EXPECT_NEAR(analytic, numeric, 2e-3 + 2e-2 * std::fabs(numeric)) << s.name << "[" << idx << "]";
      ++checked;
    }
  }
  EXPECT_EQ(checked, static_cast<int>(specs.size()) * 3);
}

TEST(GptGradcheck, TwoLayerLossMatchesFiniteDifferences) { check_gradients(two_layers()); }

// Llama's choices: RMSNorm, grouped-query attention (2 groups of 2 heads:
// the K/V copies' gradients summed), untied output layer, no biases,
// QK-LayerNorm, RoPE with Llama-3.1's scaling (SwiGLU on its own below).
TEST(GptGradcheck, LlamaLikeOptions) {
  GptConfig cfg = two_layers();
  cfg.num_attention_heads = 4;
  cfg.normalization = trainer::Normalization::RMSNorm;
  cfg.num_query_groups = 2;
  cfg.untie_embeddings_and_output_weights = true;
  cfg.add_bias_linear = false;
  cfg.qk_layernorm = true;
  cfg.position_embedding_type = trainer::PositionEmbedding::Rope;
  cfg.rotary_base = 500000;
  cfg.use_rope_scaling = true;
  check_gradients(cfg);
}

// SwiGLU: fc1's [gate; up] halves meet in silu(gate) * up.
TEST(GptGradcheck, SwigluMlp) {
  GptConfig cfg = two_layers();
  cfg.num_attention_heads = 4;
  cfg.swiglu = true;
  cfg.ffn_hidden_size = 24;
  check_gradients(cfg);
}

// MPT's choices: ALiBi (3 heads: llm-foundry's slopes for a count that is
// not a power of two), no biases, QK-LayerNorm, and the fused QKV output
// clamped (loosely: an element near the clip bound would put a kink inside
// the finite difference).
TEST(GptGradcheck, MptLikeAlibiClipQkv) {
  GptConfig cfg = two_layers();
  cfg.hidden_size = 18;
  cfg.num_attention_heads = 3;
  cfg.position_embedding_type = trainer::PositionEmbedding::Alibi;
  cfg.add_bias_linear = false;
  cfg.qk_layernorm = true;
  cfg.clip_qkv = 3.0f;
  check_gradients(cfg);
}

// Multi-query attention (G = 1) with LayerNorm-1p, a QKV bias alone, a
// head dim of its own (odd: 5), an explicit FFN size, and interleaved RoPE
// over part of the head dim (2 of 5 dims).
TEST(GptGradcheck, MultiQueryLayerNorm1p) {
  GptConfig cfg = two_layers();
  cfg.position_embedding_type = trainer::PositionEmbedding::Rope;
  cfg.rotary_percent = 0.5f;
  cfg.rotary_interleaved = true;
  cfg.num_attention_heads = 3;
  cfg.num_query_groups = 1;
  cfg.kv_channels = 5;
  cfg.ffn_hidden_size = 24;
  cfg.apply_layernorm_1p = true;
  cfg.add_bias_linear = false;
  cfg.add_qkv_bias = true;
  cfg.qk_layernorm = true;
  check_gradients(cfg);
}

}  // namespace
}  // namespace kiln
