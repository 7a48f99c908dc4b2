#include "trainer/checkpoint/hf_mpt.h"

#include <cmath>
#include <cstdint>
#include <vector>

#include "core/error.h"
#include "trainer/checkpoint/dtype_convert.h"

namespace kiln::trainer {

namespace {

// The slope exponent transformers' MptModel builds ALiBi with, whatever
// attn_config.alibi_bias_max says.
constexpr float kHfAlibiBiasMax = 8.0f;
// MptMLP's up_proj is 4 x d_model, whatever expansion_ratio says.
constexpr int64_t kHfExpansionRatio = 4;

std::string shape_text(const std::vector<int64_t>& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) r += ", ";
    r += std::to_string(s[i]);
  }
  return r + "]";
}

// One HF tensor and kiln's: the same values, or QKV rows reordered.
struct Mapping {
  std::string kiln, hf;
  bool qkv = false;
};

std::vector<Mapping> mappings(const GptConfig& c) {
  std::vector<Mapping> m = {{"embedding.word_embeddings.weight", "transformer.wte.weight"}};
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const std::string k = "decoder.layers." + std::to_string(l) + ".";
    const std::string h = "transformer.blocks." + std::to_string(l) + ".";
    m.push_back({k + "input_layernorm.weight", h + "norm_1.weight"});
    m.push_back({k + "self_attention.linear_qkv.weight", h + "attn.Wqkv.weight", true});
    m.push_back({k + "self_attention.linear_proj.weight", h + "attn.out_proj.weight"});
    m.push_back({k + "pre_mlp_layernorm.weight", h + "norm_2.weight"});
    m.push_back({k + "mlp.linear_fc1.weight", h + "ffn.up_proj.weight"});
    m.push_back({k + "mlp.linear_fc2.weight", h + "ffn.down_proj.weight"});
  }
  m.push_back({"decoder.final_layernorm.weight", "transformer.norm_f.weight"});
  return m;
}

// Moves the rows of a [3C, C] QKV weight from kiln's order (row (h * 3 + s)
// * D + d, s = q, k, v) to HF's ((s * H + h) * D + d), or back.
std::vector<float> reorder_qkv(const std::vector<float>& v, int64_t H, int64_t D, int64_t width, bool to_hf) {
  std::vector<float> out(v.size());
  for (int64_t s = 0; s < 3; ++s)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t d = 0; d < D; ++d) {
        const int64_t kiln_row = (h * 3 + s) * D + d, hf_row = (s * H + h) * D + d;
        const int64_t from = to_hf ? kiln_row : hf_row, to = to_hf ? hf_row : kiln_row;
        std::copy_n(v.begin() + from * width, width, out.begin() + to * width);
      }
  return out;
}

std::vector<float> convert(const Mapping& m, const GptConfig& c, const std::vector<float>& v, const graph::Shape& shape,
                           bool to_hf) {
  if (!m.qkv) return v;
  return reorder_qkv(v, c.num_attention_heads, c.head_dim(), shape[1], to_hf);
}

Error bad_field(const std::string& key, const nlohmann::json& v, const std::string& why) {
  std::string message = "config.json: '";
  message += key;
  message += "' is ";
  message += v.dump();
  message += "; ";
  message += why;
  return Error(message);
}

int64_t positive_field(const nlohmann::json& j, const char* key) {
  if (!j.contains(key) || !j.at(key).is_number_integer() || j.at(key).get<int64_t>() <= 0)
    throw bad_field(key, j.contains(key) ? j.at(key) : nlohmann::json("missing"),
                    "an MPT config needs a positive integer there");
  return j.at(key).get<int64_t>();
}

// A field HF's MptForCausalLM does not read: it must hold the value HF
// behaves as, else the checkpoint was meant for another implementation.
void fixed_field(const nlohmann::json& j, const std::string& prefix, const char* key, const nlohmann::json& want,
                 const char* why) {
  if (!j.contains(key) || j.at(key).is_null() || j.at(key) == want) return;
  if (want.is_number() && j.at(key).is_number() && j.at(key).get<double>() == want.get<double>()) return;
  throw bad_field(prefix + key, j.at(key), why);
}

}  // namespace

void check_mpt_expressible(const GptConfig& c) {
  std::string what;
  if (c.position_embedding_type != PositionEmbedding::Alibi)
    what = std::string("--position-embedding-type ") + to_string(c.position_embedding_type) + " (MPT's is alibi)";
  else if (c.alibi_bias_max != kHfAlibiBiasMax)
    what = "--alibi-bias-max " + std::to_string(c.alibi_bias_max) + " (transformers builds ALiBi with 8)";
  else if (c.normalization != Normalization::LayerNorm)
    what = "RMSNorm (MPT's is LayerNorm)";
  else if (c.apply_layernorm_1p)
    what = "--apply-layernorm-1p";
  else if (c.add_bias_layernorm)
    what = "LayerNorm with a bias (MPT's has none: --disable-bias-layernorm)";
  else if (c.swiglu)
    what = "SwiGLU (MPT's MLP is GELU)";
  else if (c.squared_relu)
    what = "--squared-relu (MPT's MLP is GELU)";
  else if (!c.exact_gelu)
    what = "GELU(tanh) (MPT's is the exact erf GELU: --exact-gelu)";
  else if (c.ffn_hidden() != kHfExpansionRatio * c.hidden_size)
    what = "--ffn-hidden-size " + std::to_string(c.ffn_hidden()) + " (transformers' MptMLP is 4 x hidden size)";
  else if (c.query_groups() != c.num_attention_heads)
    what = "grouped-query attention";
  else if (c.head_dim() * c.num_attention_heads != c.hidden_size)
    what = "--kv-channels (MPT's head dim is hidden size / heads)";
  else if (c.add_bias_linear || c.add_qkv_bias)
    what = "linear biases (MPT's have none: --disable-bias-linear)";
  else if (c.qk_layernorm)
    what = "--qk-layernorm (transformers' MptAttention does not implement attn_config.qk_ln)";
  else if (c.untie_embeddings_and_output_weights)
    what = "an untied output layer (MPT's LM head is wte)";
  if (!what.empty())
    throw Error("the checkpoint's model uses " + what + ", which Hugging Face's MptForCausalLM cannot express");
}

nlohmann::json mpt_hf_config(const GptConfig& c) {
  check_mpt_expressible(c);
  const nlohmann::json clip = c.clip_qkv > 0.0f ? nlohmann::json(c.clip_qkv) : nlohmann::json(nullptr);
  return {{"architectures", {"MptForCausalLM"}},
          {"model_type", "mpt"},
          {"d_model", c.hidden_size},
          {"n_heads", c.num_attention_heads},
          {"n_layers", c.num_layers},
          {"expansion_ratio", kHfExpansionRatio},
          {"max_seq_len", c.seq_length},
          {"vocab_size", c.vocab_size},
          {"layer_norm_epsilon", c.layernorm_epsilon},
          {"no_bias", true},
          {"learned_pos_emb", false},
          {"emb_pdrop", 0.0},
          {"resid_pdrop", 0.0},
          {"logit_scale", nullptr},
          {"norm_type", "low_precision_layernorm"},
          {"attn_config",
           {{"attn_type", "multihead_attention"},
            {"attn_pdrop", 0.0},
            {"attn_impl", "torch"},
            {"clip_qkv", clip},
            {"softmax_scale", nullptr},
            {"prefix_lm", false},
            {"qk_ln", false},
            {"attn_uses_sequence_id", false},
            {"alibi", true},
            {"alibi_bias_max", kHfAlibiBiasMax}}},
          {"initializer_range", c.init_method_std},
          {"tie_word_embeddings", true},
          {"use_cache", true},
          {"torch_dtype", "float32"}};
}

GptConfig mpt_config_from_hf(const nlohmann::json& j) {
  GptConfig c;
  c.position_embedding_type = PositionEmbedding::Alibi;
  c.alibi_bias_max = kHfAlibiBiasMax;
  c.normalization = Normalization::LayerNorm;
  c.add_bias_layernorm = false;
  c.add_bias_linear = false;
  c.exact_gelu = true;
  c.hidden_size = positive_field(j, "d_model");
  c.num_attention_heads = positive_field(j, "n_heads");
  c.num_layers = positive_field(j, "n_layers");
  c.seq_length = positive_field(j, "max_seq_len");
  c.vocab_size = positive_field(j, "vocab_size");
  if (j.contains("layer_norm_epsilon") && !j.at("layer_norm_epsilon").is_null()) {
    if (!j.at("layer_norm_epsilon").is_number())
      throw bad_field("layer_norm_epsilon", j.at("layer_norm_epsilon"), "it must be a number");
    c.layernorm_epsilon = j.at("layer_norm_epsilon").get<float>();
  }
  if (j.contains("initializer_range") && j.at("initializer_range").is_number())
    c.init_method_std = j.at("initializer_range").get<float>();
  fixed_field(j, "", "expansion_ratio", kHfExpansionRatio, "transformers' MptMLP is 4 x d_model, and so is kiln's");
  fixed_field(j, "", "no_bias", true, "transformers' MptForCausalLM has no biases, and kiln imports none");
  fixed_field(j, "", "tie_word_embeddings", true, "transformers' MptForCausalLM ties its LM head to wte");
  if (j.contains("attn_config") && !j.at("attn_config").is_null()) {
    const nlohmann::json& a = j.at("attn_config");
    if (!a.is_object()) throw bad_field("attn_config", a, "it must be an object");
    fixed_field(a, "attn_config.", "alibi", true, "transformers' MptModel always applies ALiBi");
    fixed_field(a, "attn_config.", "alibi_bias_max", kHfAlibiBiasMax,
                "transformers' MptModel builds ALiBi with 8, whatever this says");
    fixed_field(a, "attn_config.", "qk_ln", false, "transformers' MptAttention does not implement QK-LayerNorm");
    fixed_field(a, "attn_config.", "prefix_lm", false, "kiln's attention is causal only");
    if (a.contains("softmax_scale") && !a.at("softmax_scale").is_null()) {
      // HF's default, 1 / sqrt(hidden_size / n_heads), in floating point.
      const double want =
          1.0 / std::sqrt(static_cast<double>(c.hidden_size) / static_cast<double>(c.num_attention_heads));
      if (!a.at("softmax_scale").is_number() || std::fabs(a.at("softmax_scale").get<double>() - want) > 1e-6 * want)
        throw bad_field("attn_config.softmax_scale", a.at("softmax_scale"),
                        "kiln scales attention scores by 1 / sqrt(head dim) only");
    }
    if (a.contains("clip_qkv") && !a.at("clip_qkv").is_null()) {
      if (!a.at("clip_qkv").is_number() || a.at("clip_qkv").get<double>() < 0.0)
        throw bad_field("attn_config.clip_qkv", a.at("clip_qkv"), "it must be null or a non-negative number");
      c.clip_qkv = a.at("clip_qkv").get<float>();
      // A clip a float holds as 0 would turn clipping off.
      if (c.clip_qkv == 0.0f && a.at("clip_qkv").get<double>() != 0.0)
        throw bad_field("attn_config.clip_qkv", a.at("clip_qkv"), "it is not 0 but below the smallest float");
    }
  }
  if (c.hidden_size % c.num_attention_heads != 0) throw bad_field("n_heads", j.at("n_heads"), "it must divide d_model");
  c.validate();
  return c;
}

std::map<std::string, SafeTensor> mpt_to_hf(const GptConfig& c, const std::map<std::string, SafeTensor>& kiln) {
  std::map<std::string, SafeTensor> out;
  for (const Mapping& m : mappings(c)) {
    auto it = kiln.find(m.kiln);
    if (it == kiln.end()) throw Error("checkpoint has no tensor " + m.kiln + "; it is not a kiln MPT-style checkpoint");
    const SafeTensor& t = it->second;
    out[m.hf] = SafeTensor::from_f32(t.shape, convert(m, c, t.to_f32(), t.shape, true));
  }
  return out;
}

ExpectedTensors mpt_hf_tensors(const GptConfig& c) {
  const std::map<std::string, graph::Shape> kiln_shapes = parameter_shapes(c);
  ExpectedTensors out;
  for (const Mapping& m : mappings(c)) out[m.hf] = kiln_shapes.at(m.kiln);
  return out;
}

std::map<std::string, SafeTensor> mpt_from_hf(const GptConfig& c, const std::map<std::string, SafeTensor>& hf) {
  const std::map<std::string, graph::Shape> kiln_shapes = parameter_shapes(c);
  std::map<std::string, SafeTensor> out;
  for (const Mapping& m : mappings(c)) {
    auto it = hf.find(m.hf);
    if (it == hf.end()) throw Error("model.safetensors has no tensor " + m.hf + "; the model is incomplete");
    const graph::Shape& shape = kiln_shapes.at(m.kiln);
    if (it->second.shape != shape)
      throw Error("tensor " + m.hf + " has shape " + shape_text(it->second.shape) + ", but config.json implies " +
                  shape_text(shape));
    const SafeTensor t = widen_to_f32(it->second, "tensor " + m.hf);
    out[m.kiln] = SafeTensor::from_f32(shape, convert(m, c, t.to_f32(), shape, false));
  }
  return out;
}

}  // namespace kiln::trainer
