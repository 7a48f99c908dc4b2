// The MPT mapping (trainer/checkpoint/hf_mpt.h) as pure functions: where each
// kiln QKV row lands in HF's blocked Wqkv, which tensors exist (no biases, no
// LayerNorm beta, no lm_head), that config and tensors survive export then
// import, and the one-line refusals both ways. Every value is distinct (its
// own index), so a row landing in the wrong place changes the result.
#include <gtest/gtest.h>

#include <numeric>

#include "core/error.h"
#include "trainer/checkpoint/hf_architecture.h"
#include "trainer/checkpoint/hf_mpt.h"
#include "trainer/checkpoint/model_config.h"

using namespace kiln::trainer;

namespace {

// 4 heads of 4, ALiBi, no biases, exact GELU, --clip-qkv.
GptConfig mpt_config() {
  GptConfig c;
  c.num_layers = 2;
  c.hidden_size = 16;
  c.num_attention_heads = 4;
  c.seq_length = 16;
  c.position_embedding_type = PositionEmbedding::Alibi;
  c.add_bias_linear = false;
  c.add_bias_layernorm = false;
  c.exact_gelu = true;
  c.clip_qkv = 6.0f;
  return c;
}

std::map<std::string, SafeTensor> iota_model(const GptConfig& c) {
  std::map<std::string, SafeTensor> m;
  float next = 0.0f;
  for (const ParamSpec& p : gpt_parameters(c)) {
    std::vector<float> v(static_cast<size_t>(kiln::graph::numel(p.full_shape)));
    std::iota(v.begin(), v.end(), next);
    next += static_cast<float>(v.size());
    m[p.name] = SafeTensor::from_f32(p.full_shape, v);
  }
  return m;
}

std::vector<float> row_of(const SafeTensor& t, int64_t row) {
  const std::vector<float> v = t.to_f32();
  const int64_t cols = t.shape[1];
  return {v.begin() + row * cols, v.begin() + (row + 1) * cols};
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const kiln::Error& e) {
    return e.what();
  }
  return "";
}

TEST(HfMpt, ConfigSurvivesExportAndImport) {
  const GptConfig c = mpt_config();
  const nlohmann::json hf = mpt_hf_config(c);
  EXPECT_EQ(hf["model_type"], "mpt");
  EXPECT_EQ(hf["architectures"][0], "MptForCausalLM");
  EXPECT_EQ(hf["expansion_ratio"], 4);
  EXPECT_EQ(hf["no_bias"], true);
  EXPECT_EQ(hf["attn_config"]["alibi"], true);
  EXPECT_EQ(hf["attn_config"]["clip_qkv"], 6.0);
  EXPECT_EQ(hf["attn_config"]["qk_ln"], false);
  EXPECT_EQ(model_config_json(mpt_config_from_hf(hf)), model_config_json(c));
  GptConfig unclipped = c;
  unclipped.clip_qkv = 0.0f;
  EXPECT_TRUE(mpt_hf_config(unclipped)["attn_config"]["clip_qkv"].is_null());
  EXPECT_EQ(model_config_json(mpt_config_from_hf(mpt_hf_config(unclipped))), model_config_json(unclipped));
}

TEST(HfMpt, BlocksPerHeadQkvRowsAndMapsNothingElse) {
  const GptConfig c = mpt_config();
  const auto kiln = iota_model(c);
  const HfModel hf = kiln_to_hf(c, kiln);
  EXPECT_EQ(hf.architecture, "MptForCausalLM");
  // wte, norm_f, and per layer norm_1, Wqkv, out_proj, norm_2, up_proj, down_proj.
  EXPECT_EQ(hf.tensors.size(), 2u + 6u * 2u);
  EXPECT_EQ(kiln.size(), hf.tensors.size());
  const SafeTensor& qkv = kiln.at("decoder.layers.1.self_attention.linear_qkv.weight");  // [H=4, 3, D=4] rows
  const SafeTensor& wqkv = hf.tensors.at("transformer.blocks.1.attn.Wqkv.weight");       // [3, H, D] rows
  ASSERT_EQ(wqkv.shape, (std::vector<int64_t>{48, 16}));
  // (s, h, d): kiln row (h * 3 + s) * 4 + d, HF row (s * 4 + h) * 4 + d.
  EXPECT_EQ(row_of(wqkv, (0 * 4 + 2) * 4 + 1), row_of(qkv, (2 * 3 + 0) * 4 + 1));  // q of head 2
  EXPECT_EQ(row_of(wqkv, (1 * 4 + 0) * 4 + 3), row_of(qkv, (0 * 3 + 1) * 4 + 3));  // k of head 0
  EXPECT_EQ(row_of(wqkv, (2 * 4 + 3) * 4 + 0), row_of(qkv, (3 * 3 + 2) * 4 + 0));  // v of head 3
  EXPECT_EQ(hf.tensors.at("transformer.blocks.0.ffn.up_proj.weight").to_f32(),
            kiln.at("decoder.layers.0.mlp.linear_fc1.weight").to_f32());
  EXPECT_EQ(hf.tensors.at("transformer.norm_f.weight").to_f32(), kiln.at("decoder.final_layernorm.weight").to_f32());
}

TEST(HfMpt, TensorsSurviveExportAndImportBitForBit) {
  const GptConfig c = mpt_config();
  const auto kiln = iota_model(c);
  const KilnModel back = hf_to_kiln(mpt_hf_config(c), mpt_to_hf(c, kiln));
  ASSERT_EQ(back.tensors.size(), kiln.size());
  for (const auto& [name, t] : kiln) EXPECT_EQ(back.tensors.at(name).to_f32(), t.to_f32()) << name;
}

TEST(HfMpt, ExportRefusesWhatMptCannotExpress) {
  auto refused = [](const GptConfig& c, const std::string& what) {
    const std::string e = error_of([&] { check_mpt_expressible(c); });
    EXPECT_NE(e.find(what), std::string::npos) << e;
    EXPECT_NE(e.find("MptForCausalLM cannot express"), std::string::npos) << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  };
  GptConfig c = mpt_config();
  c.qk_layernorm = true;
  refused(c, "--qk-layernorm");
  c = mpt_config();
  c.exact_gelu = false;
  refused(c, "GELU(tanh)");
  c = mpt_config();
  c.add_bias_layernorm = true;
  refused(c, "LayerNorm with a bias");
  c = mpt_config();
  c.add_bias_linear = true;
  refused(c, "linear biases");
  c = mpt_config();
  c.untie_embeddings_and_output_weights = true;
  refused(c, "untied output layer");
  c = mpt_config();
  c.num_query_groups = 2;
  refused(c, "grouped-query attention");
  c = mpt_config();
  c.alibi_bias_max = 4.0f;
  refused(c, "--alibi-bias-max");
  c = mpt_config();
  c.ffn_hidden_size = 32;
  refused(c, "--ffn-hidden-size 32");
  c = mpt_config();
  c.position_embedding_type = PositionEmbedding::Rope;
  refused(c, "--position-embedding-type rope");
  c = mpt_config();
  c.exact_gelu = false;
  c.swiglu = true;
  refused(c, "SwiGLU");
  c = mpt_config();
  c.add_bias_layernorm = true;
  c.normalization = Normalization::RMSNorm;
  refused(c, "RMSNorm");
}

TEST(HfMpt, ImportRefusesFieldsHfDoesNotHonour) {
  auto refused = [](const std::function<void(nlohmann::json&)>& edit, const std::string& what) {
    nlohmann::json hf = mpt_hf_config(mpt_config());
    edit(hf);
    const std::string e = error_of([&] { mpt_config_from_hf(hf); });
    EXPECT_NE(e.find(what), std::string::npos) << e;
  };
  refused([](nlohmann::json& j) { j["attn_config"]["qk_ln"] = true; }, "attn_config.qk_ln");
  refused([](nlohmann::json& j) { j["attn_config"]["alibi_bias_max"] = 16; }, "attn_config.alibi_bias_max");
  refused([](nlohmann::json& j) { j["attn_config"]["softmax_scale"] = 0.1; }, "attn_config.softmax_scale");
  refused([](nlohmann::json& j) { j["expansion_ratio"] = 2; }, "expansion_ratio");
  refused([](nlohmann::json& j) { j["no_bias"] = false; }, "no_bias");
  refused([](nlohmann::json& j) { j["tie_word_embeddings"] = false; }, "tie_word_embeddings");
  refused([](nlohmann::json& j) { j.erase("d_model"); }, "d_model");
  // softmax_scale at its default value is accepted.
  nlohmann::json hf = mpt_hf_config(mpt_config());
  hf["attn_config"]["softmax_scale"] = 0.5;  // 1 / sqrt(16 / 4)
  EXPECT_EQ(model_config_json(mpt_config_from_hf(hf)), model_config_json(mpt_config()));
}

}  // namespace
