// Megatron-LM's architecture options on the GPT builder: the parameters
// each option adds, removes or reshapes (Megatron-core names), the
// tensor-parallel split of grouped QKV and of SwiGLU's [gate; up] fc1, the
// flags' one-line errors, and the model config's round trip through a
// checkpoint's meta.json (older checkpoints load as GPT-2), the GELU choice
// and LayerNorm without bias.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "core/error.h"
#include "trainer/checkpoint/model_config.h"
#include "trainer/model/tensor_parallel.h"
#include "trainer/train_config.h"

namespace kiln::trainer {
namespace {

std::map<std::string, graph::Shape> shapes_of(const GptConfig& c) {
  std::map<std::string, graph::Shape> m;
  for (const ParamSpec& s : gpt_parameters(c)) m[s.name] = s.shape;
  return m;
}

const ParamSpec& spec_named(const std::vector<ParamSpec>& specs, const std::string& name) {
  auto it = std::find_if(specs.begin(), specs.end(), [&](const ParamSpec& s) { return s.name == name; });
  if (it == specs.end()) throw Error("no parameter " + name);
  return *it;
}

GptConfig gpt2_small() {
  GptConfig c;
  c.num_layers = 1;
  c.hidden_size = 64;
  c.num_attention_heads = 4;
  c.vocab_size = 32;
  c.seq_length = 8;
  return c;
}

// Llama-3's choices on a small scale.
GptConfig llama_like() {
  GptConfig c = gpt2_small();
  c.normalization = Normalization::RMSNorm;
  c.num_query_groups = 2;
  c.untie_embeddings_and_output_weights = true;
  c.add_bias_linear = false;
  c.qk_layernorm = true;
  c.position_embedding_type = PositionEmbedding::None;
  return c;
}

const std::string L = "decoder.layers.0.";

TEST(ModelOptions, DefaultIsGpt2) {
  const auto p = shapes_of(gpt2_small());
  EXPECT_EQ(p.size(), 2u + 12u + 2u);
  EXPECT_EQ(p.at(L + "self_attention.linear_qkv.weight"), (graph::Shape{192, 64}));
  EXPECT_EQ(p.at(L + "mlp.linear_fc1.weight"), (graph::Shape{256, 64}));
  EXPECT_FALSE(p.count("output_layer.weight"));
}

TEST(ModelOptions, LlamaLikeParameters) {
  const auto p = shapes_of(llama_like());
  // Megatron-core's per-group QKV: (H + 2G) * D rows.
  EXPECT_EQ(p.at(L + "self_attention.linear_qkv.weight"), (graph::Shape{(4 + 2 * 2) * 16, 64}));
  EXPECT_EQ(p.at(L + "self_attention.q_layernorm.weight"), (graph::Shape{16}));
  EXPECT_EQ(p.at(L + "self_attention.k_layernorm.weight"), (graph::Shape{16}));
  EXPECT_EQ(p.at("output_layer.weight"), (graph::Shape{32, 64}));
  for (const auto& [name, shape] : p) {
    EXPECT_EQ(name.find(".bias"), std::string::npos) << name << ": RMSNorm and --disable-bias-linear leave no bias";
    EXPECT_EQ(name.find("position_embeddings"), std::string::npos) << name;
  }
}

TEST(ModelOptions, QkvBiasSurvivesDisabledLinearBiases) {
  GptConfig c = llama_like();
  c.add_qkv_bias = true;
  const auto p = shapes_of(c);
  EXPECT_EQ(p.at(L + "self_attention.linear_qkv.bias"), (graph::Shape{128}));
  EXPECT_FALSE(p.count(L + "self_attention.linear_proj.bias"));
  EXPECT_FALSE(p.count(L + "mlp.linear_fc1.bias"));
}

TEST(ModelOptions, LayerNorm1pStoresZeroCentredWeights) {
  GptConfig c = gpt2_small();
  c.apply_layernorm_1p = true;
  const std::vector<ParamSpec> specs = gpt_parameters(c);
  EXPECT_EQ(spec_named(specs, L + "input_layernorm.weight").init, ParamSpec::Init::Zeros);
  EXPECT_EQ(spec_named(specs, "decoder.final_layernorm.weight").init, ParamSpec::Init::Zeros);
}

TEST(ModelOptions, FfnSizeAndKvChannels) {
  GptConfig c = gpt2_small();
  c.ffn_hidden_size = 100;
  c.kv_channels = 8;
  const auto p = shapes_of(c);
  EXPECT_EQ(p.at(L + "mlp.linear_fc1.weight"), (graph::Shape{100, 64}));
  EXPECT_EQ(p.at(L + "mlp.linear_fc2.weight"), (graph::Shape{64, 100}));
  EXPECT_EQ(p.at(L + "self_attention.linear_qkv.weight"), (graph::Shape{3 * 4 * 8, 64}));
  EXPECT_EQ(p.at(L + "self_attention.linear_proj.weight"), (graph::Shape{64, 32}));
}

TEST(ModelOptions, SwigluDefaultFfnIsMegatronsRule) {
  GptConfig c = gpt2_small();
  c.hidden_size = 384;
  c.swiglu = true;
  EXPECT_EQ(c.ffn_hidden(), 1024);  // int((4 * 384 * 2 / 3) / 64) * 64
  c.hidden_size = 4096;
  c.num_attention_heads = 32;
  EXPECT_EQ(c.ffn_hidden(), 10880);  // Llama-2 7B sets 11008 explicitly; the rule gives this
  const auto p = shapes_of(c);
  EXPECT_EQ(p.at(L + "mlp.linear_fc1.weight"), (graph::Shape{2 * 10880, 4096}));  // [gate; up]
  EXPECT_EQ(p.at(L + "mlp.linear_fc2.weight"), (graph::Shape{4096, 10880}));
}

TEST(ModelOptions, TensorParallelShardsWholeQueryGroups) {
  GptConfig c = llama_like();
  c.tensor_parallel = 2;
  const ParamSpec qkv = spec_named(gpt_parameters(c), L + "self_attention.linear_qkv.weight");
  EXPECT_EQ(qkv.shape, (graph::Shape{64, 64}));
  EXPECT_EQ(c.local_heads(), 2);
  EXPECT_EQ(c.local_query_groups(), 1);
  EXPECT_EQ(spec_named(gpt_parameters(c), "output_layer.weight").shape, (graph::Shape{16, 64}));
}

TEST(ModelOptions, SwigluFc1ShardsEachChunk) {
  GptConfig c = gpt2_small();
  c.swiglu = true;
  c.ffn_hidden_size = 4;
  c.hidden_size = 8;
  c.num_attention_heads = 2;
  c.tensor_parallel = 2;
  const std::vector<ParamSpec> specs = gpt_parameters(c);
  const ParamSpec& bias = spec_named(specs, L + "mlp.linear_fc1.bias");  // [gate 0..3; up 4..7]
  EXPECT_EQ(bias.shard_chunks, 2);
  const std::vector<float> full{0, 1, 2, 3, 4, 5, 6, 7};
  EXPECT_EQ(take_shard(bias, full, 2, 0), (std::vector<float>{0, 1, 4, 5}));
  EXPECT_EQ(take_shard(bias, full, 2, 1), (std::vector<float>{2, 3, 6, 7}));
  const ParamSpec& weight = spec_named(specs, L + "mlp.linear_fc1.weight");  // [8, 8]
  std::vector<float> w(64);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(i);
  const std::vector<float> rank1 = take_shard(weight, w, 2, 1);  // rows 2, 3, 6, 7
  ASSERT_EQ(rank1.size(), 32u);
  EXPECT_EQ(rank1[0], 16.0f);
  EXPECT_EQ(rank1[16], 48.0f);
  std::vector<float> back(64, -1.0f);
  for (int64_t r = 0; r < 2; ++r) put_shard(weight, take_shard(weight, w, 2, r), back, 2, r);
  EXPECT_EQ(back, w);
}

// `kiln train` flags through parsing and finalize(); the error message either throws.
std::string finalize_error(std::vector<std::string> args, int64_t tensor_parallel = 1) {
  TrainConfig cfg;
  Flags flags("train");
  cfg.register_flags(flags);
  args.insert(args.begin(), {"--hidden-size", "64", "--num-attention-heads", "4"});
  cfg.tensor_model_parallel_size = tensor_parallel;
  try {
    flags.parse(args);  // a value no model can hold is refused here
    cfg.finalize(flags);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ModelOptions, FlagErrorsNameTheFlag) {
  EXPECT_EQ(finalize_error({"--normalization", "RMSNorm", "--group-query-attention", "--num-query-groups", "2",
                            "--untie-embeddings-and-output-weights", "--disable-bias-linear", "--qk-layernorm",
                            "--position-embedding-type", "none", "--norm-epsilon", "1e-6"}),
            "");
  EXPECT_NE(finalize_error({"--normalization", "BatchNorm"}).find("--normalization BatchNorm"), std::string::npos);
  EXPECT_NE(finalize_error({"--position-embedding-type", "sinusoidal"}).find("--position-embedding-type"),
            std::string::npos);
  EXPECT_NE(finalize_error({"--group-query-attention", "--num-query-groups", "3"})
                .find("--num-query-groups 3 does not divide --num-attention-heads 4"),
            std::string::npos);
  EXPECT_NE(finalize_error({"--num-query-groups", "2"}).find("needs --group-query-attention"), std::string::npos);
  EXPECT_NE(finalize_error({"--group-query-attention", "--num-query-groups", "1"}, 2)
                .find("--num-query-groups 1 is not divisible by --tensor-model-parallel-size 2"),
            std::string::npos);
  EXPECT_NE(finalize_error({"--ffn-hidden-size", "0"}).find("--ffn-hidden-size must be positive"), std::string::npos);
  EXPECT_NE(finalize_error({"--kv-channels", "-1"}).find("--kv-channels must be positive"), std::string::npos);
  EXPECT_NE(finalize_error({"--norm-epsilon", "0"}).find("--norm-epsilon must be positive"), std::string::npos);
  // Finite as a double but not as the model's float (or not 0 but 0 as a
  // float): trained with as inf or 0 and saved as JSON null, which no --load
  // accepts. Refused, naming the flag and the value given.
  for (const char* flag : {"--norm-epsilon", "--clip-qkv", "--rope-scaling-factor", "--alibi-bias-max"})
    for (const char* value : {"1e+300", "1e-300"}) {
      const std::string err = finalize_error({flag, value});
      EXPECT_NE(err.find(std::string(flag) + " " + value + " is outside the range of the model's 32-bit config"),
                std::string::npos)
          << flag << " " << value << ": " << err;
    }
  EXPECT_NE(finalize_error({"--position-embedding-type", "rope", "--use-rope-scaling", "--rope-scaling-factor", "0.5"})
                .find("--rope-scaling-factor must be at least 1, got 0.5"),
            std::string::npos);
  EXPECT_NE(finalize_error({"--ffn-hidden-size", "33"}, 2).find("--ffn-hidden-size 33 is not divisible"),
            std::string::npos);
  EXPECT_NE(finalize_error({"--use-checkpoint-args"}).find("--use-checkpoint-args needs --load"), std::string::npos);
}

std::string validate_error(const GptConfig& c) {
  try {
    c.validate();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ModelOptions, RopeAlibiAndClipValidation) {
  GptConfig c = gpt2_small();
  c.position_embedding_type = PositionEmbedding::Rope;
  c.rotary_percent = 1.5f;
  EXPECT_NE(validate_error(c).find("--rotary-percent 1.5"), std::string::npos) << validate_error(c);
  c.rotary_percent = 0.01f;  // 16 * 0.01 leaves no pair
  EXPECT_NE(validate_error(c).find("leaves no rotary dims"), std::string::npos) << validate_error(c);
  c.rotary_percent = 1.0f;
  c.rotary_base = 0;
  EXPECT_NE(validate_error(c).find("--rotary-base"), std::string::npos) << validate_error(c);
  c = gpt2_small();
  c.position_embedding_type = PositionEmbedding::Alibi;
  c.alibi_bias_max = 0;
  EXPECT_NE(validate_error(c).find("--alibi-bias-max"), std::string::npos) << validate_error(c);
  c = gpt2_small();
  c.clip_qkv = -1;
  EXPECT_NE(validate_error(c).find("--clip-qkv"), std::string::npos) << validate_error(c);
}

TEST(ModelOptions, BiasFreeLayerNormHasNoBetaParameter) {
  GptConfig c = gpt2_small();
  c.add_bias_layernorm = false;
  const auto p = shapes_of(c);
  EXPECT_EQ(p.size(), 2u + 12u + 2u - 3u);  // the three norms' .bias are gone
  EXPECT_FALSE(p.count(L + "input_layernorm.bias"));
  EXPECT_FALSE(p.count("decoder.final_layernorm.bias"));
  EXPECT_TRUE(p.count(L + "input_layernorm.weight"));
  EXPECT_TRUE(p.count(L + "mlp.linear_fc1.bias"));  // linear biases are --disable-bias-linear's
}

// The MLP's activation op: GELU (tanh) by default, GELU_ERF with --exact-gelu.
TEST(ModelOptions, ExactGeluSelectsTheErfOp) {
  auto ops_of = [](const GptConfig& c) {
    graph::Graph g;
    build_gpt_forward(g, c, 1);
    std::set<kiln_op> ops;
    for (const auto& n : g.nodes()) ops.insert(n.op);
    return ops;
  };
  GptConfig c = gpt2_small();
  EXPECT_TRUE(ops_of(c).count(KILN_OP_GELU));
  EXPECT_FALSE(ops_of(c).count(KILN_OP_GELU_ERF));
  c.exact_gelu = true;
  EXPECT_TRUE(ops_of(c).count(KILN_OP_GELU_ERF));
  EXPECT_FALSE(ops_of(c).count(KILN_OP_GELU));
}

TEST(ModelOptions, GeluAndLayerNormBiasFlags) {
  EXPECT_EQ(finalize_error({"--exact-gelu", "--disable-bias-layernorm"}), "");
  EXPECT_EQ(finalize_error({"--openai-gelu"}), "");
  EXPECT_NE(finalize_error({"--openai-gelu", "--exact-gelu"}).find("--openai-gelu (tanh) and --exact-gelu (erf)"),
            std::string::npos);
  EXPECT_NE(finalize_error({"--exact-gelu", "--swiglu"}).find("--exact-gelu"), std::string::npos);
  EXPECT_NE(finalize_error({"--disable-bias-layernorm", "--normalization", "RMSNorm"}).find("--disable-bias-layernorm"),
            std::string::npos);
}

TEST(ModelConfig, RoundTripsEveryOption) {
  GptConfig c = llama_like();
  c.layernorm_epsilon = 1e-6f;
  c.apply_layernorm_1p = true;
  c.ffn_hidden_size = 96;
  c.kv_channels = 8;
  c.add_qkv_bias = true;
  c.rotary_base = 500000;
  c.rotary_percent = 0.5f;
  c.rotary_interleaved = true;
  c.use_rope_scaling = true;
  c.rope_scaling_factor = 32.0f;
  c.alibi_bias_max = 4.0f;
  c.exact_gelu = true;
  GptConfig layernorm = c;  // the LayerNorm-only option, on a LayerNorm model
  layernorm.normalization = Normalization::LayerNorm;
  layernorm.add_bias_layernorm = false;
  EXPECT_FALSE(model_config_from_json(model_config_json(layernorm)).add_bias_layernorm);
  EXPECT_EQ(model_config_json(model_config_from_json(model_config_json(layernorm))), model_config_json(layernorm));
  const GptConfig back(model_config_from_json(model_config_json(c)));
  EXPECT_EQ(model_config_json(back), model_config_json(c));
  EXPECT_EQ(back.normalization, Normalization::RMSNorm);
  EXPECT_EQ(back.query_groups(), 2);
  EXPECT_EQ(back.head_dim(), 8);
  EXPECT_EQ(back.ffn_hidden(), 96);
  EXPECT_TRUE(back.untie_embeddings_and_output_weights);
  EXPECT_FALSE(back.add_bias_linear);
  EXPECT_TRUE(back.qk_layernorm);
  EXPECT_EQ(back.position_embedding_type, PositionEmbedding::None);
  EXPECT_EQ(back.rope_scaling_factor, 32.0f);
  // Layout is not stored: checkpoints hold full tensors.
  GptConfig tp2 = c;
  tp2.tensor_parallel = 2;
  EXPECT_EQ(model_config_json(tp2), model_config_json(c));
}

// --squared-relu is stored as the name of the MLP's activation op, only when
// set (every other model's meta.json stays as it was), and read back; an
// activation kiln does not know is refused, not taken for GELU.
TEST(ModelConfig, SquaredReluRoundTripsAndOnlyItIsStored) {
  GptConfig c;
  c.num_layers = 2;
  c.hidden_size = 32;
  c.seq_length = 16;
  EXPECT_FALSE(model_config_json(c).contains("activation"));
  c.squared_relu = true;
  const nlohmann::json j = model_config_json(c);
  EXPECT_EQ(j.at("activation"), kiln_op_name(KILN_OP_SQUARED_RELU));
  EXPECT_TRUE(model_config_from_json(j).squared_relu);
  nlohmann::json other = j;
  other["activation"] = "relu6";
  EXPECT_THROW(model_config_from_json(other), Error);
  GptConfig both = c;
  both.swiglu = true;
  EXPECT_THROW(both.validate(), Error);
  both = c;
  both.exact_gelu = true;
  EXPECT_THROW(both.validate(), Error);
}

TEST(ModelConfig, OlderCheckpointsLoadAsGpt2) {
  const nlohmann::json old = {{"num_layers", 2},        {"hidden_size", 32}, {"num_attention_heads", 4},
                              {"vocab_size", 256},      {"seq_length", 16},  {"layernorm_epsilon", 1e-5},
                              {"init_method_std", 0.02}};
  const GptConfig c(model_config_from_json(old));
  EXPECT_EQ(c.normalization, Normalization::LayerNorm);
  EXPECT_EQ(c.position_embedding_type, PositionEmbedding::LearnedAbsolute);
  EXPECT_FALSE(c.untie_embeddings_and_output_weights);
  EXPECT_TRUE(c.add_bias_linear);
  EXPECT_EQ(c.query_groups(), 4);
  EXPECT_EQ(c.ffn_hidden(), 128);
  EXPECT_FALSE(c.exact_gelu);  // they were trained with GELU(tanh)
  EXPECT_TRUE(c.add_bias_layernorm);
  GptConfig gpt2;
  gpt2.num_layers = 2;
  gpt2.hidden_size = 32;
  gpt2.seq_length = 16;
  EXPECT_EQ(model_config_json(c), model_config_json(gpt2));
}

TEST(ModelConfig, BadValuesNameTheKey) {
  nlohmann::json j = model_config_json(llama_like());
  j["normalization"] = "GroupNorm";
  EXPECT_THROW(model_config_from_json(j), Error);
  j = model_config_json(llama_like());
  j["qk_layernorm"] = 1;
  try {
    model_config_from_json(j);
    ADD_FAILURE() << "a number for a boolean key was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'qk_layernorm'"), std::string::npos) << e.what();
  }
}

// The table itself (model_options.h): every row reads back field for field
// from the meta.json it writes, with each row away from its default in one
// of two configs (some options exclude each other); a Required row missing
// from meta.json is refused naming it; every row with a flag is a flag of
// `kiln train`, and a float row refuses what a float cannot hold.
TEST(ModelConfig, EveryRowOfTheTableRoundTrips) {
  GptConfig a = llama_like();
  a.num_layers = 3;
  a.vocab_size = 40;
  a.seq_length = 12;
  a.layernorm_epsilon = 1e-6f;
  a.apply_layernorm_1p = true;
  a.ffn_hidden_size = 96;
  a.kv_channels = 8;
  a.add_qkv_bias = true;
  a.position_embedding_type = PositionEmbedding::Rope;
  a.rotary_base = 500000;
  a.rotary_percent = 0.5f;
  a.rotary_interleaved = true;
  a.use_rope_scaling = true;
  a.rope_scaling_factor = 32.0f;
  a.alibi_bias_max = 4.0f;
  a.clip_qkv = 2.5f;
  a.init_method_std = 0.01f;
  GptConfig b = gpt2_small();
  b.max_position_embeddings = 20;
  b.add_bias_layernorm = false;
  b.squared_relu = true;
  b.apply_residual_connection_post_layernorm = true;
  const GptConfig defaults;
  int away_from_default = 0;
  for (const GptConfig& c : {a, b}) {
    const GptConfig back(model_config_from_json(model_config_json(c)));
    const GptConfig want = c.with_derived_sizes();
#define KILN_EXPECT_ROW(codec, field, ...)         \
  EXPECT_TRUE(back.field == want.field) << #field; \
  away_from_default += c.field == defaults.field ? 0 : 1;
    KILN_MODEL_OPTIONS(KILN_EXPECT_ROW)
#undef KILN_EXPECT_ROW
  }
  int rows = 0;
#define KILN_COUNT_ROW(...) ++rows;
  KILN_MODEL_OPTIONS(KILN_COUNT_ROW)
#undef KILN_COUNT_ROW
  EXPECT_GE(away_from_default, rows) << "a row is at its default in both configs: the round trip does not test it";

  for (const char* key : {"num_layers", "layernorm_epsilon", "init_method_std"}) {
    nlohmann::json j = model_config_json(a);
    j.erase(key);
    try {
      model_config_from_json(j);
      ADD_FAILURE() << "a meta.json without " << key << " was accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("'") + key + "' is missing"), std::string::npos) << e.what();
    }
  }
}

TEST(ModelOptions, EveryRowWithAFlagIsAFlagOfTrain) {
  TrainConfig cfg;
  Flags flags("train");
  cfg.register_flags(flags);
  std::set<std::string> names;
  for (const auto& [name, value] : flags.values()) names.insert(name);
  const char* flag_of_row = nullptr;
#define KILN_EXPECT_FLAG(codec, field, default_value, flag, ...) \
  flag_of_row = flag;                                            \
  if (flag_of_row != nullptr) {                                  \
    EXPECT_EQ(names.count(flag_of_row), 1u) << #field;           \
  }
  KILN_MODEL_OPTIONS(KILN_EXPECT_FLAG)
#undef KILN_EXPECT_FLAG
  // A negated switch turns its field off; a choice is parsed into the enum.
  ASSERT_TRUE(flags.parse({"--disable-bias-linear", "--normalization", "RMSNorm", "--init-method-std", "0.5"}));
  EXPECT_FALSE(cfg.model.add_bias_linear);
  EXPECT_EQ(cfg.model.normalization, Normalization::RMSNorm);
  EXPECT_EQ(cfg.model.init_method_std, 0.5f);
  EXPECT_THROW(flags.parse({"--init-method-std", "-1"}), Error);
}

// --apply-residual-connection-post-layernorm (Megatron's legacy layer): each
// of a layer's two residual adds takes the output of the norm before it,
// where the default (pre-LN) adds take the norms' inputs and no norm output
// reaches an ADD. Its meta.json key is written only when set.
TEST(ModelOptions, PostLayernormResidualAddsTakeTheNormOutputs) {
  for (const bool post : {false, true}) {
    GptConfig c = gpt2_small();
    c.num_layers = 2;
    c.apply_residual_connection_post_layernorm = post;
    graph::Graph g;
    build_gpt_forward(g, c, 2);
    std::set<graph::ValueId> layer_norm_outputs;
    int adds_of_norm_outputs = 0;
    for (const graph::Node& n : g.nodes()) {
      if (n.op == KILN_OP_LAYERNORM) layer_norm_outputs.insert(n.outputs.at(0));
      if (n.op == KILN_OP_ADD)
        for (graph::ValueId in : n.inputs) adds_of_norm_outputs += layer_norm_outputs.count(in) ? 1 : 0;
    }
    // 2 norms per layer, and the final norm, which feeds the head.
    EXPECT_EQ(layer_norm_outputs.size(), 5u);
    EXPECT_EQ(adds_of_norm_outputs, post ? 4 : 0) << "post=" << post;
    EXPECT_EQ(model_config_json(c).contains("apply_residual_connection_post_layernorm"), post);
  }
}

// A resume with other model flags is refused naming each differing key, in
// the checkpoint's value and the run's (finding C16b: two 27-key JSON dumps
// named none); the init std alone does not matter, a load replaces the
// initial weights.
TEST(ModelConfig, DifferencesNameTheKeysAndSkipTheInitStd) {
  const GptConfig saved = llama_like();
  GptConfig run = saved;
  run.init_method_std = 0.05f;
  EXPECT_TRUE(model_config_differences(saved, run).empty());
  run.num_layers = 3;
  run.squared_relu = true;
  run.num_query_groups = 0;  // as many as heads
  const std::vector<std::string> d = model_config_differences(saved, run);
  ASSERT_EQ(d.size(), 3u) << ::testing::PrintToString(d);
  EXPECT_EQ(d[0], "\"num_layers\":1 (this run: 3)");
  EXPECT_EQ(d[1], "\"activation\":false (this run: \"squared_relu\")");
  EXPECT_EQ(d[2], "\"num_query_groups\":2 (this run: 4)");
}

}  // namespace
}  // namespace kiln::trainer
