#include "trainer/checkpoint/hf_gpt2.h"

#include <cstdint>
#include <vector>

#include "core/error.h"
#include "trainer/checkpoint/dtype_convert.h"

namespace kiln::trainer {

namespace {

std::string shape_text(const std::vector<int64_t>& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

// [rows, cols] -> [cols, rows].
std::vector<float> transpose(const std::vector<float>& v, int64_t rows, int64_t cols) {
  std::vector<float> t(v.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) t[static_cast<size_t>(c * rows + r)] = v[static_cast<size_t>(r * cols + c)];
  return t;
}

// Index of QKV output feature (s, h, d) in kiln's [H, 3, D] and HF's [3, H, D].
int64_t kiln_qkv_row(int64_t s, int64_t h, int64_t d, int64_t H, int64_t D) {
  (void)H;
  return (h * 3 + s) * D + d;
}
int64_t hf_qkv_col(int64_t s, int64_t h, int64_t d, int64_t H, int64_t D) { return (s * H + h) * D + d; }

// Reorders the 3C output features of a QKV weight ([3C, in], rows) or bias
// ([3C], in_features 1) from kiln's order to HF's (to_hf) or back.
std::vector<float> reorder_qkv(const std::vector<float>& v, int64_t H, int64_t D, int64_t in_features, bool to_hf) {
  std::vector<float> out(v.size());
  for (int64_t s = 0; s < 3; ++s)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t d = 0; d < D; ++d) {
        int64_t k = kiln_qkv_row(s, h, d, H, D), f = hf_qkv_col(s, h, d, H, D);
        int64_t from = to_hf ? k : f, to = to_hf ? f : k;
        for (int64_t i = 0; i < in_features; ++i)
          out[static_cast<size_t>(to * in_features + i)] = v[static_cast<size_t>(from * in_features + i)];
      }
  return out;
}

// One HF tensor and how it relates to kiln's.
struct Mapping {
  std::string kiln, hf;
  enum class Layout { Same, Transposed, QkvWeight, QkvBias } layout = Layout::Same;
};

std::vector<Mapping> mappings(const GptConfig& c) {
  using L = Mapping::Layout;
  std::vector<Mapping> m = {{"embedding.word_embeddings.weight", "transformer.wte.weight", L::Same},
                            {"embedding.position_embeddings.weight", "transformer.wpe.weight", L::Same}};
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const std::string k = "decoder.layers." + std::to_string(l) + ".", h = "transformer.h." + std::to_string(l) + ".";
    m.push_back({k + "input_layernorm.weight", h + "ln_1.weight", L::Same});
    m.push_back({k + "input_layernorm.bias", h + "ln_1.bias", L::Same});
    m.push_back({k + "self_attention.linear_qkv.weight", h + "attn.c_attn.weight", L::QkvWeight});
    m.push_back({k + "self_attention.linear_qkv.bias", h + "attn.c_attn.bias", L::QkvBias});
    m.push_back({k + "self_attention.linear_proj.weight", h + "attn.c_proj.weight", L::Transposed});
    m.push_back({k + "self_attention.linear_proj.bias", h + "attn.c_proj.bias", L::Same});
    m.push_back({k + "pre_mlp_layernorm.weight", h + "ln_2.weight", L::Same});
    m.push_back({k + "pre_mlp_layernorm.bias", h + "ln_2.bias", L::Same});
    m.push_back({k + "mlp.linear_fc1.weight", h + "mlp.c_fc.weight", L::Transposed});
    m.push_back({k + "mlp.linear_fc1.bias", h + "mlp.c_fc.bias", L::Same});
    m.push_back({k + "mlp.linear_fc2.weight", h + "mlp.c_proj.weight", L::Transposed});
    m.push_back({k + "mlp.linear_fc2.bias", h + "mlp.c_proj.bias", L::Same});
  }
  m.push_back({"decoder.final_layernorm.weight", "transformer.ln_f.weight", L::Same});
  m.push_back({"decoder.final_layernorm.bias", "transformer.ln_f.bias", L::Same});
  return m;
}

// kiln's shape -> HF's shape for a mapping.
std::vector<int64_t> hf_shape(const Mapping& m, const std::vector<int64_t>& kiln_shape) {
  if (m.layout == Mapping::Layout::Transposed || m.layout == Mapping::Layout::QkvWeight)
    return {kiln_shape[1], kiln_shape[0]};
  return kiln_shape;
}

std::vector<float> convert(const Mapping& m, const GptConfig& c, const std::vector<float>& v,
                           const std::vector<int64_t>& kiln_shape, bool to_hf) {
  const int64_t H = c.num_attention_heads, D = c.head_dim();
  switch (m.layout) {
    case Mapping::Layout::Same: return v;
    case Mapping::Layout::Transposed:
      return to_hf ? transpose(v, kiln_shape[0], kiln_shape[1]) : transpose(v, kiln_shape[1], kiln_shape[0]);
    case Mapping::Layout::QkvBias: return reorder_qkv(v, H, D, 1, to_hf);
    case Mapping::Layout::QkvWeight: {
      // kiln [3C, C] rows reordered, then transposed to [C, 3C]; the reverse
      // transposes first.
      const int64_t out = kiln_shape[0], in = kiln_shape[1];
      if (to_hf) return transpose(reorder_qkv(v, H, D, in, true), out, in);
      return reorder_qkv(transpose(v, in, out), H, D, in, false);
    }
  }
  return v;
}

int64_t positive_field(const nlohmann::json& j, const char* key) {
  if (!j.contains(key) || !j.at(key).is_number_integer() || j.at(key).get<int64_t>() <= 0)
    throw Error(std::string("config.json: '") + key + "' is " + (j.contains(key) ? j.at(key).dump() : "missing") +
                "; a GPT-2 config needs a positive integer there");
  return j.at(key).get<int64_t>();
}

}  // namespace

void check_gpt2_expressible(const GptConfig& c) {
  std::string what;
  if (c.normalization != Normalization::LayerNorm)
    what = "RMSNorm";
  else if (c.apply_layernorm_1p)
    what = "--apply-layernorm-1p";
  else if (!c.add_bias_layernorm)
    what = "LayerNorm without a bias";
  else if (c.swiglu)
    what = "SwiGLU";
  else if (c.squared_relu)
    what = "--squared-relu";
  else if (c.query_groups() != c.num_attention_heads)
    what = "grouped-query attention";
  else if (c.head_dim() * c.num_attention_heads != c.hidden_size)
    what = "--kv-channels";
  else if (c.untie_embeddings_and_output_weights)
    what = "an untied output layer";
  else if (!c.add_bias_linear)
    what = "linear layers without biases";
  else if (c.qk_layernorm)
    what = "QK-LayerNorm";
  else if (c.position_embedding_type != PositionEmbedding::LearnedAbsolute)
    what = "positions other than learned";
  else if (c.clip_qkv > 0.0f)
    what = "--clip-qkv";
  if (!what.empty())
    throw Error("the checkpoint's model uses " + what +
                ", which Hugging Face's GPT2LMHeadModel cannot express; kiln exports learned-position models as "
                "GPT-2 and rotary ones (--position-embedding-type rope) as Llama");
}

nlohmann::json gpt2_hf_config(const GptConfig& c) {
  check_gpt2_expressible(c);
  return {{"architectures", {"GPT2LMHeadModel"}},
          {"model_type", "gpt2"},
          {"n_embd", c.hidden_size},
          {"n_head", c.num_attention_heads},
          {"n_layer", c.num_layers},
          {"n_positions", c.position_table_rows()},
          {"n_ctx", c.seq_length},
          {"n_inner", c.ffn_hidden()},
          {"vocab_size", c.vocab_size},
          {"layer_norm_epsilon", c.layernorm_epsilon},
          // HF GPT2Config.activation_function: "gelu_new" is the tanh
          // approximation, "gelu" torch's exact erf GELU.
          {"activation_function", c.exact_gelu ? "gelu" : "gelu_new"},
          {"initializer_range", c.init_method_std},
          {"resid_pdrop", 0.0},
          {"embd_pdrop", 0.0},
          {"attn_pdrop", 0.0},
          {"scale_attn_weights", true},
          {"scale_attn_by_inverse_layer_idx", false},
          {"reorder_and_upcast_attn", false},
          {"tie_word_embeddings", true},
          {"torch_dtype", "float32"}};
}

GptConfig gpt2_config_from_hf(const nlohmann::json& j) {
  const nlohmann::json type = j.contains("model_type") ? j.at("model_type") : nlohmann::json();
  if (type != "gpt2")
    throw Error("config.json: model_type " + type.dump() + " is not supported; kiln imports model_type \"gpt2\"");
  GptConfig c;
  c.hidden_size = positive_field(j, "n_embd");
  c.num_attention_heads = positive_field(j, "n_head");
  c.num_layers = positive_field(j, "n_layer");
  c.seq_length = positive_field(j, "n_positions");
  c.vocab_size = positive_field(j, "vocab_size");
  if (j.contains("layer_norm_epsilon") && j["layer_norm_epsilon"].is_number())
    c.layernorm_epsilon = j["layer_norm_epsilon"].get<float>();
  if (j.contains("initializer_range") && j["initializer_range"].is_number())
    c.init_method_std = j["initializer_range"].get<float>();
  const std::string act = j.value("activation_function", std::string("gelu_new"));
  if (act == "gelu")
    c.exact_gelu = true;
  else if (act != "gelu_new" && act != "gelu_pytorch_tanh")
    throw Error("config.json: activation_function \"" + act +
                "\" is neither GELU(tanh) (gelu_new, gelu_pytorch_tanh) nor the exact GELU (gelu), kiln's two");
  if (j.contains("n_inner") && !j["n_inner"].is_null() && j["n_inner"] != nlohmann::json(c.ffn_hidden()))
    throw Error("config.json: n_inner " + j["n_inner"].dump() + " is not 4 * n_embd; kiln's MLP is 4x");
  if (j.value("tie_word_embeddings", true) == false)
    throw Error("config.json: tie_word_embeddings is false; kiln's GPT-2 ties the LM head to wte");
  c.validate();
  return c;
}

std::map<std::string, SafeTensor> gpt2_to_hf(const GptConfig& c, const std::map<std::string, SafeTensor>& kiln) {
  std::map<std::string, SafeTensor> out;
  for (const Mapping& m : mappings(c)) {
    auto it = kiln.find(m.kiln);
    if (it == kiln.end()) throw Error("checkpoint has no tensor " + m.kiln + "; it is not a kiln GPT-2 checkpoint");
    const SafeTensor& t = it->second;
    out[m.hf] = SafeTensor::from_f32(hf_shape(m, t.shape), convert(m, c, t.to_f32(), t.shape, true));
  }
  return out;
}

ExpectedTensors gpt2_hf_tensors(const GptConfig& c) {
  const std::map<std::string, graph::Shape> kiln_shapes = parameter_shapes(c);
  ExpectedTensors out;
  for (const Mapping& m : mappings(c)) out[m.hf] = hf_shape(m, kiln_shapes.at(m.kiln));
  return out;
}

std::map<std::string, SafeTensor> gpt2_from_hf(const GptConfig& c, const std::map<std::string, SafeTensor>& hf) {
  const std::map<std::string, graph::Shape> kiln_shapes = parameter_shapes(c);
  std::map<std::string, SafeTensor> out;
  for (const Mapping& m : mappings(c)) {
    auto it = hf.find(m.hf);
    if (it == hf.end()) throw Error("model.safetensors has no tensor " + m.hf + "; the export is incomplete");
    const std::vector<int64_t>& kshape = kiln_shapes.at(m.kiln);
    const std::vector<int64_t> want = hf_shape(m, kshape);
    if (it->second.shape != want)
      throw Error("tensor " + m.hf + " has shape " + shape_text(it->second.shape) + ", but config.json implies " +
                  shape_text(want));
    const SafeTensor t = widen_to_f32(it->second, "tensor " + m.hf);
    out[m.kiln] = SafeTensor::from_f32(kshape, convert(m, c, t.to_f32(), kshape, false));
  }
  return out;
}

}  // namespace kiln::trainer
