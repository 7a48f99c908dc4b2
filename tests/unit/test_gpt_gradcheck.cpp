// The whole model, not just single ops: the gradient autodiff derives for a
// 2-layer GPT must match central finite differences of the loss, evaluated
// by the reference interpreter, for a sample of parameter elements.
//
// The step: the reference stores every value in fp32 (accumulating in
// double), so a central difference has two errors: truncation, about eps^2
// times the third derivative / 6, and rounding, about (ulp of the loss,
// ~2e-7) / eps. With the larger-than-usual init below, the combined Llama
// model (RMSNorm, QK-norm, RoPE, GQA, SwiGLU) has large third derivatives:
// at eps = 1e-2 its worst element (a word-embedding entry, feeding RMSNorm
// and the untied output) missed the tolerance by 46%, and the miss shrank
// about 4x for each halving of eps: truncation, not a wrong gradient.
// Measured worst error / tolerance of that model for eps 1e-2, 5e-3, 2e-3,
// 1e-3, 5e-4, 2e-4: 1.46, 0.37, 0.064, 0.064, 0.16, 0.36 (below 1e-3
// rounding takes over). eps = 2e-3 sits at the bottom of that curve, with a
// margin of about 15x for every model here under the unchanged tolerance.
#include <gtest/gtest.h>

#include <algorithm>
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

  // The inputs of every CLAMP (--clip-qkv), to see which elements are clipped.
  std::vector<std::string> clamp_inputs;
  for (const graph::Node& n : g.nodes())
    if (n.op == KILN_OP_CLAMP) {
      clamp_inputs.push_back("clamp_input." + std::to_string(clamp_inputs.size()));
      g.output(clamp_inputs.back(), n.inputs.at(0));
    }

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

  // Which clamp inputs lie beyond the clip bound: the side of the kink
  // every element is on.
  auto clipped = [&](const graph::TensorMap& result) {
    std::vector<bool> beyond;
    for (const auto& name : clamp_inputs)
      for (float x : result.at(name).f32) beyond.push_back(std::fabs(x) > cfg.clip_qkv);
    return beyond;
  };
  graph::TensorMap out = graph::run_reference(g, inputs);
  const std::vector<bool> clipped_here = clipped(out);
  if (cfg.clip_qkv > 0.0f) {
    // The clamp must cut for the check to test it: a good share of the q, k
    // and v elements beyond the bound, their gradient stopped there.
    const auto n_clipped = std::count(clipped_here.begin(), clipped_here.end(), true);
    EXPECT_GE(static_cast<double>(n_clipped), 0.1 * static_cast<double>(clipped_here.size()))
        << n_clipped << " of " << clipped_here.size() << " QKV elements beyond --clip-qkv " << cfg.clip_qkv;
  }

  const double eps = 2e-3;  // see the top of the file
  int checked = 0, straddled = 0;
  for (const auto& s : specs) {
    const HostTensor& grad = out.at("grad." + s.name);
    // Three elements per tensor: first, last and one in the middle.
    const int64_t n = grad.numel();
    for (int64_t idx : {int64_t{0}, n / 2, n - 1}) {
      graph::TensorMap plus = inputs, minus = inputs;
      plus[s.name].f32[static_cast<size_t>(idx)] += static_cast<float>(eps);
      minus[s.name].f32[static_cast<size_t>(idx)] -= static_cast<float>(eps);
      const graph::TensorMap out_plus = graph::run_reference(g, plus);
      const graph::TensorMap out_minus = graph::run_reference(g, minus);
      ++checked;
      // A step that carries a QKV element across the clip bound puts the
      // kink inside the difference, which then measures neither side's slope.
      if (clipped(out_plus) != clipped_here || clipped(out_minus) != clipped_here) {
        ++straddled;
        continue;
      }
      const double numeric =
          (static_cast<double>(out_plus.at("loss").f32[0]) - static_cast<double>(out_minus.at("loss").f32[0])) /
          (2 * eps);
      const double analytic = grad.f32[static_cast<size_t>(idx)];
      EXPECT_NEAR(analytic, numeric, 2e-3 + 2e-2 * std::fabs(numeric)) << s.name << "[" << idx << "]";
    }
  }
  EXPECT_EQ(checked, static_cast<int>(specs.size()) * 3);
  // Nearly every step stays on one side of every kink.
  EXPECT_LE(straddled, checked / 10) << straddled << " of " << checked << " steps crossed the clip bound";
}

TEST(GptGradcheck, TwoLayerLossMatchesFiniteDifferences) { check_gradients(two_layers()); }

// Llama's choices together: RMSNorm, grouped-query attention (2 groups of 2
// heads: the K/V copies' gradients summed), SwiGLU, untied output layer, no
// biases, QK-LayerNorm, RoPE with Llama-3.1's scaling.
TEST(GptGradcheck, LlamaLikeOptions) {
  GptConfig cfg = two_layers();
  cfg.num_attention_heads = 4;
  cfg.swiglu = true;
  cfg.ffn_hidden_size = 24;
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

// SwiGLU alone: fc1's [gate; up] halves meet in silu(gate) * up.
TEST(GptGradcheck, SwigluMlp) {
  GptConfig cfg = two_layers();
  cfg.num_attention_heads = 4;
  cfg.swiglu = true;
  cfg.ffn_hidden_size = 24;
  check_gradients(cfg);
}

// MPT's choices: ALiBi (3 heads: llm-foundry's slopes for a count that is
// not a power of two), no biases, QK-LayerNorm, and the fused QKV output
// clamped at 2.0, which clips 229 of the 1512 QKV elements at this init
// (check_gradients asserts at least 10%) while only 2 of the 81 steps carry
// an element across the bound (those are left out). A bound of 1.0 clips
// 48% but 15 steps cross it; the earlier 3.0 clipped only 50 (3%).
TEST(GptGradcheck, MptLikeAlibiClipQkv) {
  GptConfig cfg = two_layers();
  cfg.hidden_size = 18;
  cfg.num_attention_heads = 3;
  cfg.position_embedding_type = trainer::PositionEmbedding::Alibi;
  cfg.add_bias_linear = false;
  cfg.qk_layernorm = true;
  cfg.clip_qkv = 2.0f;
  check_gradients(cfg);
}

// HF MPT's model: the exact erf GELU (GELU_ERF) and LayerNorms whose beta
// is a constant zero (a FILL input, no parameter), with ALiBi and no biases.
TEST(GptGradcheck, MptExactGeluBiasFreeLayerNorm) {
  GptConfig cfg = two_layers();
  cfg.num_attention_heads = 4;
  cfg.position_embedding_type = trainer::PositionEmbedding::Alibi;
  cfg.add_bias_linear = false;
  cfg.add_bias_layernorm = false;
  cfg.exact_gelu = true;
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

// Megatron's --apply-residual-connection-post-layernorm: both residuals of
// each layer start from the norm's output.
TEST(GptGradcheck, ResidualConnectionPostLayernorm) {
  GptConfig cfg = two_layers();
  cfg.apply_residual_connection_post_layernorm = true;
  check_gradients(cfg);
}

}  // namespace
}  // namespace kiln
