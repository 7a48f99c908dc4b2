#include "trainer/checkpoint/model_config.h"

#include <string>

#include "core/error.h"
#include "kiln/ops.h"

namespace kiln::trainer {

nlohmann::json model_config_json(const GptConfig& c) {
  nlohmann::json j = {{"num_layers", c.num_layers},
                      {"hidden_size", c.hidden_size},
                      {"num_attention_heads", c.num_attention_heads},
                      {"vocab_size", c.vocab_size},
                      {"seq_length", c.seq_length},
                      {"layernorm_epsilon", c.layernorm_epsilon},
                      {"init_method_std", c.init_method_std},
                      {"normalization", to_string(c.normalization)},
                      {"apply_layernorm_1p", c.apply_layernorm_1p},
                      {"ffn_hidden_size", c.ffn_hidden()},
                      {"swiglu", c.swiglu},
                      {"num_query_groups", c.query_groups()},
                      {"kv_channels", c.head_dim()},
                      {"untie_embeddings_and_output_weights", c.untie_embeddings_and_output_weights},
                      {"add_bias_linear", c.add_bias_linear},
                      {"add_qkv_bias", c.add_qkv_bias},
                      {"qk_layernorm", c.qk_layernorm},
                      {"position_embedding_type", to_string(c.position_embedding_type)},
                      {"rotary_base", c.rotary_base},
                      {"rotary_percent", c.rotary_percent},
                      {"rotary_interleaved", c.rotary_interleaved},
                      {"use_rope_scaling", c.use_rope_scaling},
                      {"rope_scaling_factor", c.rope_scaling_factor},
                      {"alibi_bias_max", c.alibi_bias_max},
                      {"clip_qkv", c.clip_qkv},
                      {"exact_gelu", c.exact_gelu},
                      {"add_bias_layernorm", c.add_bias_layernorm}};
  // Only a table larger than the sequence is recorded, so the configs of
  // every other model read as before.
  // The MLP's activation op, recorded only when it is not the GELU the two
  // flags above choose, so the configs of every other model read as before.
  if (c.squared_relu) j["activation"] = kiln_op_name(KILN_OP_SQUARED_RELU);
  if (c.position_embedding_type == PositionEmbedding::LearnedAbsolute && c.position_table_rows() != c.seq_length)
    j["max_position_embeddings"] = c.position_table_rows();
  return j;
}

int64_t meta_integer(const nlohmann::json& meta, const char* key, int64_t fallback) {
  if (!meta.is_object() || !meta.contains(key)) return fallback;
  const nlohmann::json& v = meta.at(key);
  // Not get<int64_t>() on any number: a float too large for int64_t would be
  // undefined behaviour, and a corrupt meta.json must only cause an error.
  if (!v.is_number_integer())
    throw Error(std::string("checkpoint meta.json: '") + key + "' is " + v.dump() + ", not an integer");
  return v.get<int64_t>();
}

namespace {

Error bad_value(const char* key, const nlohmann::json& v, const char* expected) {
  return Error(std::string("checkpoint meta.json has no valid model config ('") + key + "' is " + v.dump() + ", not " +
               expected + ")");
}

// Readers of the optional keys: `value` keeps GPT-2's default when absent.
void read(const nlohmann::json& j, const char* key, bool& value) {
  if (!j.contains(key)) return;
  if (!j.at(key).is_boolean()) throw bad_value(key, j.at(key), "true or false");
  value = j.at(key).get<bool>();
}

void read(const nlohmann::json& j, const char* key, int64_t& value) {
  if (!j.contains(key)) return;
  if (!j.at(key).is_number_integer()) throw bad_value(key, j.at(key), "an integer");
  value = j.at(key).get<int64_t>();
}

void read(const nlohmann::json& j, const char* key, float& value) {
  if (!j.contains(key)) return;
  if (!j.at(key).is_number()) throw bad_value(key, j.at(key), "a number");
  value = j.at(key).get<float>();
}

template <typename Enum>
void read(const nlohmann::json& j, const char* key, Enum& value, Enum (*parse)(const std::string&)) {
  if (!j.contains(key)) return;
  if (!j.at(key).is_string()) throw bad_value(key, j.at(key), "a string");
  try {
    value = parse(j.at(key).get<std::string>());
  } catch (const Error&) {
    throw bad_value(key, j.at(key), "a known choice");
  }
}

}  // namespace

GptConfig model_config_from_json(const nlohmann::json& j) {
  try {
    auto integer = [&](const char* key) {
      const nlohmann::json& v = j.at(key);
      if (!v.is_number_integer()) throw bad_value(key, v, "an integer");
      return v.get<int64_t>();
    };
    GptConfig c;
    c.num_layers = integer("num_layers");
    c.hidden_size = integer("hidden_size");
    c.num_attention_heads = integer("num_attention_heads");
    c.vocab_size = integer("vocab_size");
    c.seq_length = integer("seq_length");
    c.layernorm_epsilon = j.at("layernorm_epsilon").get<float>();
    c.init_method_std = j.at("init_method_std").get<float>();
    read(j, "normalization", c.normalization, &parse_normalization);
    read(j, "apply_layernorm_1p", c.apply_layernorm_1p);
    read(j, "ffn_hidden_size", c.ffn_hidden_size);
    read(j, "swiglu", c.swiglu);
    read(j, "num_query_groups", c.num_query_groups);
    read(j, "kv_channels", c.kv_channels);
    read(j, "untie_embeddings_and_output_weights", c.untie_embeddings_and_output_weights);
    read(j, "add_bias_linear", c.add_bias_linear);
    read(j, "add_qkv_bias", c.add_qkv_bias);
    read(j, "qk_layernorm", c.qk_layernorm);
    read(j, "position_embedding_type", c.position_embedding_type, &parse_position_embedding);
    read(j, "rotary_base", c.rotary_base);
    read(j, "rotary_percent", c.rotary_percent);
    read(j, "rotary_interleaved", c.rotary_interleaved);
    read(j, "use_rope_scaling", c.use_rope_scaling);
    read(j, "rope_scaling_factor", c.rope_scaling_factor);
    read(j, "alibi_bias_max", c.alibi_bias_max);
    read(j, "clip_qkv", c.clip_qkv);
    // Absent in checkpoints from before these options: those models were
    // trained with GELU(tanh) and LayerNorm biases, the defaults.
    read(j, "exact_gelu", c.exact_gelu);
    read(j, "add_bias_layernorm", c.add_bias_layernorm);
    if (j.contains("activation")) {
      const nlohmann::json& a = j.at("activation");
      if (!a.is_string() || a.get<std::string>() != kiln_op_name(KILN_OP_SQUARED_RELU))
        throw bad_value("activation", a, "the op name of a supported MLP activation");
      c.squared_relu = true;
    }
    read(j, "max_position_embeddings", c.max_position_embeddings);
    c.validate();
    return c;
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("checkpoint meta.json has no valid model config (") + e.what() + ")");
  }
}

}  // namespace kiln::trainer
