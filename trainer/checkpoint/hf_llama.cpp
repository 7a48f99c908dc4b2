#include "trainer/checkpoint/hf_llama.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/error.h"
#include "trainer/checkpoint/dtype_convert.h"

namespace kiln::trainer {

namespace {

// kiln's fixed Llama-3.1 scaling parameters (trainer/model/rotary_tables.h);
// only the factor is a flag.
constexpr double kLowFreqFactor = 1.0, kHighFreqFactor = 4.0, kOriginalMaxPositions = 8192.0;

std::string shape_text(const std::vector<int64_t>& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) r += ", ";
    r += std::to_string(s[i]);
  }
  return r + "]";
}

// How an HF tensor (or group of them) relates to one kiln tensor.
enum class Split {
  None,  // the same tensor
  Qkv,   // kiln's fused per-group QKV rows -> q_proj, k_proj, v_proj
  Fc1,   // kiln's fc1 rows [gate; up] -> gate_proj, up_proj
};
struct Mapping {
  std::string kiln;
  std::vector<std::string> hf;  // 1, or 3 (Qkv), or 2 (Fc1)
  Split split = Split::None;
};

std::vector<Mapping> mappings(const GptConfig& c) {
  std::vector<Mapping> m = {{"embedding.word_embeddings.weight", {"model.embed_tokens.weight"}, Split::None}};
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const std::string k = "decoder.layers." + std::to_string(l) + ".";
    const std::string h = "model.layers." + std::to_string(l) + ".";
    std::vector<std::string> suffixes = {".weight"};
    if (c.add_bias_linear) suffixes.emplace_back(".bias");
    m.push_back({k + "input_layernorm.weight", {h + "input_layernorm.weight"}, Split::None});
    // kiln's and HF's names of a linear's weight or bias (suffix s).
    auto named = [](std::string prefix, const char* linear, const std::string& s) {
      prefix += linear;
      prefix += s;
      return prefix;
    };
    auto kn = [&](const char* linear, const std::string& s) { return named(k, linear, s); };
    auto hn = [&](const char* linear, const std::string& s) { return named(h, linear, s); };
    for (const std::string& s : suffixes) {
      m.push_back({kn("self_attention.linear_qkv", s),
                   {hn("self_attn.q_proj", s), hn("self_attn.k_proj", s), hn("self_attn.v_proj", s)},
                   Split::Qkv});
      m.push_back({kn("self_attention.linear_proj", s), {hn("self_attn.o_proj", s)}, Split::None});
    }
    m.push_back({k + "pre_mlp_layernorm.weight", {h + "post_attention_layernorm.weight"}, Split::None});
    for (const std::string& s : suffixes) {
      m.push_back({kn("mlp.linear_fc1", s), {hn("mlp.gate_proj", s), hn("mlp.up_proj", s)}, Split::Fc1});
      m.push_back({kn("mlp.linear_fc2", s), {hn("mlp.down_proj", s)}, Split::None});
    }
  }
  m.push_back({"decoder.final_layernorm.weight", {"model.norm.weight"}, Split::None});
  if (c.untie_embeddings_and_output_weights) m.push_back({"output_layer.weight", {"lm_head.weight"}, Split::None});
  return m;
}

// One row move between a kiln tensor and the i-th HF tensor of its mapping.
struct RowMove {
  size_t part;
  int64_t kiln_row, hf_row;
};

// The row moves of a split. HF's Llama rotates with rotate_half: feature r
// of a head pairs with r + D/2. kiln's default (--rotary-interleaved off)
// pairs the same way, so rows keep their order; kiln's interleaved pairing
// (2i, 2i + 1) is permuted into that order for q and k, so that HF row r
// of a head is kiln row 2r (r < D/2) or 2(r - D/2) + 1.
std::vector<RowMove> row_moves(const GptConfig& c, Split split) {
  std::vector<RowMove> moves;
  if (split == Split::Fc1) {
    const int64_t F = c.ffn_hidden();
    for (size_t part = 0; part < 2; ++part)
      for (int64_t r = 0; r < F; ++r) moves.push_back({part, static_cast<int64_t>(part) * F + r, r});
    return moves;
  }
  const int64_t H = c.num_attention_heads, G = c.query_groups(), D = c.head_dim(), per_group = H / G;
  auto rotary_row = [&](int64_t r) {
    if (!c.rotary_interleaved) return r;
    return r < D / 2 ? 2 * r : 2 * (r - D / 2) + 1;
  };
  for (int64_t g = 0; g < G; ++g) {
    const int64_t group_base = g * (per_group + 2) * D;
    for (int64_t j = 0; j < per_group; ++j)
      for (int64_t r = 0; r < D; ++r)
        moves.push_back({0, group_base + j * D + rotary_row(r), (g * per_group + j) * D + r});
    for (int64_t r = 0; r < D; ++r) {
      moves.push_back({1, group_base + per_group * D + rotary_row(r), g * D + r});
      moves.push_back({2, group_base + (per_group + 1) * D + r, g * D + r});
    }
  }
  return moves;
}

// The HF shapes of a mapping, from kiln's shape.
std::vector<std::vector<int64_t>> hf_shapes(const GptConfig& c, const Mapping& m, const graph::Shape& kiln) {
  if (m.split == Split::None) return {kiln};
  std::vector<std::vector<int64_t>> shapes;
  auto with_rows = [&](int64_t rows) {
    std::vector<int64_t> s = kiln;
    s[0] = rows;
    return s;
  };
  if (m.split == Split::Fc1) return {with_rows(c.ffn_hidden()), with_rows(c.ffn_hidden())};
  const int64_t D = c.head_dim();
  return {with_rows(c.num_attention_heads * D), with_rows(c.query_groups() * D), with_rows(c.query_groups() * D)};
}

int64_t row_width(const std::vector<int64_t>& shape) { return shape.size() > 1 ? shape[1] : 1; }

int64_t positive_field(const nlohmann::json& j, const char* key) {
  if (!j.contains(key) || !j.at(key).is_number_integer() || j.at(key).get<int64_t>() <= 0)
    throw Error(std::string("config.json: '") + key + "' is " + (j.contains(key) ? j.at(key).dump() : "missing") +
                "; a Llama config needs a positive integer there");
  return j.at(key).get<int64_t>();
}

double number_field(const nlohmann::json& j, const char* key, double fallback) {
  if (!j.contains(key) || j.at(key).is_null()) return fallback;
  if (!j.at(key).is_number())
    throw Error(std::string("config.json: '") + key + "' is " + j.at(key).dump() + ", not a number");
  return j.at(key).get<double>();
}

bool bool_field(const nlohmann::json& j, const char* key, bool fallback) {
  if (!j.contains(key) || j.at(key).is_null()) return fallback;
  if (!j.at(key).is_boolean())
    throw Error(std::string("config.json: '") + key + "' is " + j.at(key).dump() + ", not true or false");
  return j.at(key).get<bool>();
}

// rope_scaling: null, or Llama-3.1's ("rope_type" or the older "type":
// "llama3") with kiln's fixed frequency band; sets the factor.
void read_rope_scaling(const nlohmann::json& j, GptConfig& c) {
  if (!j.contains("rope_scaling") || j.at("rope_scaling").is_null()) return;
  const nlohmann::json& s = j.at("rope_scaling");
  const nlohmann::json type = s.contains("rope_type") ? s.at("rope_type") : s.value("type", nlohmann::json());
  if (type != "llama3")
    throw Error("config.json: rope_scaling type " + type.dump() +
                " is not supported; kiln implements Llama-3.1's \"llama3\" (--use-rope-scaling)");
  auto fixed = [&](const char* key, double want) {
    if (number_field(s, key, want) != want)
      throw Error(std::string("config.json: rope_scaling.") + key + " is " + s.at(key).dump() +
                  "; kiln's --use-rope-scaling uses " + std::to_string(static_cast<int64_t>(want)));
  };
  fixed("low_freq_factor", kLowFreqFactor);
  fixed("high_freq_factor", kHighFreqFactor);
  fixed("original_max_position_embeddings", kOriginalMaxPositions);
  c.use_rope_scaling = true;
  c.rope_scaling_factor = static_cast<float>(number_field(s, "factor", c.rope_scaling_factor));
}

}  // namespace

void check_llama_expressible(const GptConfig& c) {
  std::string what;
  if (c.normalization != Normalization::RMSNorm)
    what = "LayerNorm (use --normalization RMSNorm)";
  else if (c.apply_layernorm_1p)
    what = "--apply-layernorm-1p";
  else if (!c.swiglu)
    what = "a GELU MLP (Llama's is --swiglu)";
  else if (c.position_embedding_type != PositionEmbedding::Rope)
    what = std::string("--position-embedding-type ") + to_string(c.position_embedding_type) + " (Llama's is rope)";
  else if (2 * c.rotary_pairs() != c.head_dim())
    what = "--rotary-percent below 1 (or an odd head dim): HF's Llama rotates every head dim";
  else if (c.qk_layernorm)
    what = "--qk-layernorm";
  else if (c.clip_qkv > 0.0f)
    what = "--clip-qkv";
  else if (c.add_qkv_bias && !c.add_bias_linear)
    what = "--add-qkv-bias without the other linear biases (HF's attention_bias covers o_proj too)";
  if (!what.empty())
    throw Error("the checkpoint's model uses " + what + ", which Hugging Face's LlamaForCausalLM cannot express");
}

nlohmann::json llama_hf_config(const GptConfig& c) {
  check_llama_expressible(c);
  nlohmann::json rope_scaling = nullptr;
  if (c.use_rope_scaling)
    rope_scaling = {{"rope_type", "llama3"},
                    {"factor", c.rope_scaling_factor},
                    {"low_freq_factor", kLowFreqFactor},
                    {"high_freq_factor", kHighFreqFactor},
                    {"original_max_position_embeddings", static_cast<int64_t>(kOriginalMaxPositions)}};
  return {{"architectures", {"LlamaForCausalLM"}},
          {"model_type", "llama"},
          {"hidden_size", c.hidden_size},
          {"intermediate_size", c.ffn_hidden()},
          {"num_hidden_layers", c.num_layers},
          {"num_attention_heads", c.num_attention_heads},
          {"num_key_value_heads", c.query_groups()},
          {"head_dim", c.head_dim()},
          {"hidden_act", "silu"},
          {"max_position_embeddings", c.seq_length},
          {"vocab_size", c.vocab_size},
          {"rms_norm_eps", c.layernorm_epsilon},
          {"rope_theta", static_cast<double>(c.rotary_base)},
          {"rope_scaling", rope_scaling},
          {"attention_bias", c.add_bias_linear},
          {"mlp_bias", c.add_bias_linear},
          {"attention_dropout", 0.0},
          {"initializer_range", c.init_method_std},
          {"pretraining_tp", 1},
          {"tie_word_embeddings", !c.untie_embeddings_and_output_weights},
          {"torch_dtype", "float32"}};
}

GptConfig llama_config_from_hf(const nlohmann::json& j) {
  GptConfig c;
  c.normalization = Normalization::RMSNorm;
  c.swiglu = true;
  c.position_embedding_type = PositionEmbedding::Rope;
  c.hidden_size = positive_field(j, "hidden_size");
  c.ffn_hidden_size = positive_field(j, "intermediate_size");
  c.num_layers = positive_field(j, "num_hidden_layers");
  c.num_attention_heads = positive_field(j, "num_attention_heads");
  c.num_query_groups = j.contains("num_key_value_heads") && !j.at("num_key_value_heads").is_null()
                           ? positive_field(j, "num_key_value_heads")
                           : c.num_attention_heads;
  c.kv_channels = j.contains("head_dim") && !j.at("head_dim").is_null() ? positive_field(j, "head_dim")
                                                                        : c.hidden_size / c.num_attention_heads;
  c.seq_length = positive_field(j, "max_position_embeddings");
  c.vocab_size = positive_field(j, "vocab_size");
  c.layernorm_epsilon = static_cast<float>(number_field(j, "rms_norm_eps", 1e-6));
  c.init_method_std = static_cast<float>(number_field(j, "initializer_range", c.init_method_std));
  const double theta = number_field(j, "rope_theta", 10000.0);
  if (!(theta >= 1.0 && theta < 9.0e15 && std::floor(theta) == theta))
    throw Error("config.json: rope_theta " + j.at("rope_theta").dump() +
                " is not a positive integer (kiln's --rotary-base)");
  c.rotary_base = static_cast<int64_t>(theta);
  read_rope_scaling(j, c);
  const std::string act = j.value("hidden_act", std::string("silu"));
  if (act != "silu") throw Error("config.json: hidden_act \"" + act + "\" is not SwiGLU's silu; kiln imports silu");
  const bool attention_bias = bool_field(j, "attention_bias", false), mlp_bias = bool_field(j, "mlp_bias", false);
  if (attention_bias != mlp_bias)
    throw Error("config.json: attention_bias and mlp_bias differ; kiln's --disable-bias-linear covers both");
  c.add_bias_linear = attention_bias;
  c.untie_embeddings_and_output_weights = !bool_field(j, "tie_word_embeddings", false);
  c.validate();
  return c;
}

std::map<std::string, SafeTensor> llama_to_hf(const GptConfig& c, const std::map<std::string, SafeTensor>& kiln) {
  std::map<std::string, SafeTensor> out;
  for (const Mapping& m : mappings(c)) {
    auto it = kiln.find(m.kiln);
    if (it == kiln.end())
      throw Error("checkpoint has no tensor " + m.kiln + "; it is not a kiln Llama-style checkpoint");
    const SafeTensor& t = it->second;
    const std::vector<float> values = t.to_f32();
    const std::vector<std::vector<int64_t>> shapes = hf_shapes(c, m, t.shape);
    if (m.split == Split::None) {
      out[m.hf[0]] = SafeTensor::from_f32(shapes[0], values);
      continue;
    }
    const int64_t width = row_width(t.shape);
    std::vector<std::vector<float>> parts;
    for (const auto& s : shapes) parts.emplace_back(static_cast<size_t>(s[0] * width));
    for (const RowMove& mv : row_moves(c, m.split))
      std::copy_n(values.begin() + mv.kiln_row * width, width, parts[mv.part].begin() + mv.hf_row * width);
    for (size_t i = 0; i < parts.size(); ++i) out[m.hf[i]] = SafeTensor::from_f32(shapes[i], parts[i]);
  }
  return out;
}

ExpectedTensors llama_hf_tensors(const GptConfig& c) {
  const std::map<std::string, graph::Shape> kiln_shapes = parameter_shapes(c);
  ExpectedTensors out;
  for (const Mapping& m : mappings(c)) {
    const std::vector<std::vector<int64_t>> shapes = hf_shapes(c, m, kiln_shapes.at(m.kiln));
    for (size_t i = 0; i < m.hf.size(); ++i) out[m.hf[i]] = shapes[i];
  }
  return out;
}

std::map<std::string, SafeTensor> llama_from_hf(const GptConfig& c, const std::map<std::string, SafeTensor>& hf) {
  const std::map<std::string, graph::Shape> kiln_shapes = parameter_shapes(c);
  std::map<std::string, SafeTensor> out;
  for (const Mapping& m : mappings(c)) {
    const graph::Shape& kshape = kiln_shapes.at(m.kiln);
    const std::vector<std::vector<int64_t>> want = hf_shapes(c, m, kshape);
    std::vector<std::vector<float>> parts;
    for (size_t i = 0; i < m.hf.size(); ++i) {
      auto it = hf.find(m.hf[i]);
      if (it == hf.end()) throw Error("model.safetensors has no tensor " + m.hf[i] + "; the model is incomplete");
      if (it->second.shape != want[i])
        throw Error("tensor " + m.hf[i] + " has shape " + shape_text(it->second.shape) + ", but config.json implies " +
                    shape_text(want[i]));
      parts.push_back(widen_to_f32(it->second, "tensor " + m.hf[i]).to_f32());
    }
    if (m.split == Split::None) {
      out[m.kiln] = SafeTensor::from_f32(kshape, parts[0]);
      continue;
    }
    const int64_t width = row_width(kshape);
    std::vector<float> values(static_cast<size_t>(graph::numel(kshape)));
    for (const RowMove& mv : row_moves(c, m.split))
      std::copy_n(parts[mv.part].begin() + mv.hf_row * width, width, values.begin() + mv.kiln_row * width);
    out[m.kiln] = SafeTensor::from_f32(kshape, values);
  }
  return out;
}

}  // namespace kiln::trainer
