// The Llama mapping (trainer/checkpoint/hf_llama.h) as pure functions: where
// each kiln QKV and fc1 row lands in HF's q/k/v and gate/up projections, the
// rotate_half permutation of interleaved rotary rows, and that config and
// tensors survive export then import. Every value is distinct (its own
// index), so a row landing in the wrong place changes the result.
#include <gtest/gtest.h>

#include <numeric>

#include "core/error.h"
#include "trainer/checkpoint/hf_architecture.h"
#include "trainer/checkpoint/hf_llama.h"
#include "trainer/checkpoint/model_config.h"

using namespace kiln::trainer;

namespace {

// 4 heads in 2 groups (P = 2), head dim 8 (not hidden / heads), SwiGLU 48.
GptConfig llama_config() {
  GptConfig c;
  c.num_layers = 1;
  c.hidden_size = 16;
  c.num_attention_heads = 4;
  c.num_query_groups = 2;
  c.kv_channels = 8;
  c.seq_length = 16;
  c.normalization = Normalization::RMSNorm;
  c.swiglu = true;
  c.ffn_hidden_size = 48;
  c.position_embedding_type = PositionEmbedding::Rope;
  c.rotary_base = 500000;
  c.use_rope_scaling = true;
  c.rope_scaling_factor = 16.0f;
  c.layernorm_epsilon = 1e-6f;
  c.untie_embeddings_and_output_weights = true;
  c.add_bias_linear = false;
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

// Row `row` of a [rows, cols] tensor.
std::vector<float> row_of(const SafeTensor& t, int64_t row) {
  const std::vector<float> v = t.to_f32();
  const int64_t cols = t.shape[1];
  return {v.begin() + row * cols, v.begin() + (row + 1) * cols};
}

TEST(HfLlama, ConfigSurvivesExportAndImport) {
  const GptConfig c = llama_config();
  const nlohmann::json hf = llama_hf_config(c);
  EXPECT_EQ(hf["num_key_value_heads"], 2);
  EXPECT_EQ(hf["head_dim"], 8);
  EXPECT_EQ(hf["rope_scaling"]["rope_type"], "llama3");
  EXPECT_EQ(hf["tie_word_embeddings"], false);
  EXPECT_EQ(model_config_json(llama_config_from_hf(hf)), model_config_json(c));
}

TEST(HfLlama, SplitsPerGroupQkvAndGateUp) {
  const GptConfig c = llama_config();
  const auto kiln = iota_model(c);
  const auto hf = llama_to_hf(c, kiln);
  const SafeTensor& qkv = kiln.at("decoder.layers.0.self_attention.linear_qkv.weight");  // [(4 + 4) * 8, 16]
  const std::string L = "model.layers.0.";
  ASSERT_EQ(hf.at(L + "self_attn.q_proj.weight").shape, (std::vector<int64_t>{32, 16}));
  ASSERT_EQ(hf.at(L + "self_attn.k_proj.weight").shape, (std::vector<int64_t>{16, 16}));
  // Group 1's block starts at row (1 * (2 + 2)) * 8 = 32: query heads 2 and 3, then k, then v.
  EXPECT_EQ(row_of(hf.at(L + "self_attn.q_proj.weight"), 2 * 8 + 3), row_of(qkv, 32 + 3));
  EXPECT_EQ(row_of(hf.at(L + "self_attn.q_proj.weight"), 3 * 8), row_of(qkv, 32 + 8));
  EXPECT_EQ(row_of(hf.at(L + "self_attn.k_proj.weight"), 8 + 5), row_of(qkv, 32 + 16 + 5));
  EXPECT_EQ(row_of(hf.at(L + "self_attn.v_proj.weight"), 8 + 7), row_of(qkv, 32 + 24 + 7));
  EXPECT_EQ(row_of(hf.at(L + "self_attn.k_proj.weight"), 1), row_of(qkv, 16 + 1));  // group 0's k after 2 q heads
  const SafeTensor& fc1 = kiln.at("decoder.layers.0.mlp.linear_fc1.weight");
  EXPECT_EQ(row_of(hf.at(L + "mlp.gate_proj.weight"), 47), row_of(fc1, 47));
  EXPECT_EQ(row_of(hf.at(L + "mlp.up_proj.weight"), 0), row_of(fc1, 48));
  EXPECT_EQ(hf.at("lm_head.weight").to_f32(), kiln.at("output_layer.weight").to_f32());
  EXPECT_EQ(hf.count("model.layers.0.self_attn.q_proj.bias"), 0u);
}

TEST(HfLlama, InterleavedRotaryRowsGoToRotateHalfOrder) {
  GptConfig c = llama_config();
  c.rotary_interleaved = true;
  const auto kiln = iota_model(c);
  const auto hf = llama_to_hf(c, kiln);
  const SafeTensor& qkv = kiln.at("decoder.layers.0.self_attention.linear_qkv.weight");
  const SafeTensor& q = hf.at("model.layers.0.self_attn.q_proj.weight");
  // HF row r of a head: kiln row 2r for r < 4, 2(r - 4) + 1 after.
  EXPECT_EQ(row_of(q, 1), row_of(qkv, 2));
  EXPECT_EQ(row_of(q, 4), row_of(qkv, 1));
  EXPECT_EQ(row_of(q, 7), row_of(qkv, 7));
  EXPECT_EQ(row_of(hf.at("model.layers.0.self_attn.k_proj.weight"), 8 + 5), row_of(qkv, 32 + 16 + 3));
  // v does not rotate: its rows keep their order.
  EXPECT_EQ(row_of(hf.at("model.layers.0.self_attn.v_proj.weight"), 5), row_of(qkv, 24 + 5));
}

TEST(HfLlama, TensorsSurviveExportAndImportWithBiasesAndTiedHead) {
  GptConfig c = llama_config();
  c.add_bias_linear = true;
  c.untie_embeddings_and_output_weights = false;
  const auto kiln = iota_model(c);
  const auto hf = llama_to_hf(c, kiln);
  EXPECT_EQ(hf.count("lm_head.weight"), 0u);
  EXPECT_EQ(hf.at("model.layers.0.self_attn.v_proj.bias").shape, (std::vector<int64_t>{16}));
  const auto back = llama_from_hf(llama_config_from_hf(llama_hf_config(c)), hf);
  ASSERT_EQ(back.size(), kiln.size());
  for (const auto& [name, t] : kiln) {
    EXPECT_EQ(back.at(name).shape, t.shape) << name;
    EXPECT_EQ(back.at(name).data, t.data) << name;
  }
}

TEST(HfLlama, RefusesWhatLlamaCannotExpress) {
  auto refused = [](GptConfig c, const std::string& what) {
    try {
      llama_hf_config(c);
      ADD_FAILURE() << "accepted " << what;
    } catch (const kiln::Error& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  GptConfig c = llama_config();
  c.qk_layernorm = true;
  refused(c, "--qk-layernorm");
  c = llama_config();
  c.rotary_percent = 0.5f;
  refused(c, "--rotary-percent");
  c = llama_config();
  c.clip_qkv = 4.0f;
  refused(c, "--clip-qkv");
  c = llama_config();
  c.add_qkv_bias = true;
  refused(c, "--add-qkv-bias");
  c = llama_config();
  c.position_embedding_type = PositionEmbedding::Alibi;
  refused(c, "--position-embedding-type alibi");
}

TEST(HfLlama, ImportRefusesWhatKilnCannotExpress) {
  nlohmann::json hf = llama_hf_config(llama_config());
  hf["rope_scaling"]["high_freq_factor"] = 2.0;
  EXPECT_THROW(llama_config_from_hf(hf), kiln::Error);
  hf = llama_hf_config(llama_config());
  hf["mlp_bias"] = true;
  EXPECT_THROW(llama_config_from_hf(hf), kiln::Error);
  hf = llama_hf_config(llama_config());
  hf["rope_theta"] = 10000.5;
  EXPECT_THROW(llama_config_from_hf(hf), kiln::Error);
  hf = llama_hf_config(llama_config());
  hf["rope_scaling"]["rope_type"] = "yarn";
  EXPECT_THROW(llama_config_from_hf(hf), kiln::Error);
}

}  // namespace

// An option no Hugging Face mapper knows (model_options.h, Hf::Unmapped) is
// refused by name on every architecture, never dropped from the export.
TEST(HfExport, RefusesAnOptionNoMapperKnows) {
  GptConfig gpt2;
  gpt2.num_layers = 1;
  gpt2.hidden_size = 16;
  gpt2.num_attention_heads = 4;
  gpt2.seq_length = 16;
  GptConfig mpt = gpt2;
  mpt.position_embedding_type = PositionEmbedding::Alibi;
  mpt.add_bias_linear = false;
  mpt.add_bias_layernorm = false;
  mpt.exact_gelu = true;
  for (GptConfig c : {gpt2, llama_config(), mpt}) {
    EXPECT_NO_THROW(kiln_to_hf(c, iota_model(c))) << to_string(c.position_embedding_type);
    c.apply_residual_connection_post_layernorm = true;
    try {
      kiln_to_hf(c, iota_model(c));
      ADD_FAILURE() << "exported a post-LN-residual model as " << to_string(c.position_embedding_type);
    } catch (const kiln::Error& e) {
      EXPECT_NE(std::string(e.what()).find("uses --apply-residual-connection-post-layernorm"), std::string::npos)
          << e.what();
    }
  }
}

// A float option a float cannot hold (finding N33: rope_scaling.factor
// 1e308) is refused at import, naming kiln's option, instead of saved as
// null in meta.json.
TEST(HfImport, RefusesAFloatOptionOutsideFloatRange) {
  nlohmann::json config = llama_hf_config(llama_config());
  config["rope_scaling"]["factor"] = 1e308;
  try {
    hf_to_kiln(config, {});
    ADD_FAILURE() << "imported a rope_scaling factor of 1e308";
  } catch (const kiln::Error& e) {
    EXPECT_NE(std::string(e.what()).find("rope_scaling_factor is outside the range of a float"), std::string::npos)
        << e.what();
  }
}
