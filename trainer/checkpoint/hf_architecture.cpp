#include "trainer/checkpoint/hf_architecture.h"

#include <cmath>
#include <string>

#include "core/error.h"
#include "trainer/checkpoint/hf_gpt2.h"
#include "trainer/checkpoint/hf_llama.h"
#include "trainer/checkpoint/hf_mpt.h"
#include "trainer/model/layer_spec.h"

namespace kiln::trainer {

namespace {

// An option no mapper knows (model_options.h, Hf::Unmapped) would be
// dropped from the export without a word: a model that uses one, with a
// value other than its default, is refused naming it.
void refuse_unmapped(const char* flag, const char* field) {
  throw Error(std::string("the checkpoint's model uses ") + (flag != nullptr ? flag : field) +
              ", which kiln's Hugging Face export (GPT2LMHeadModel, LlamaForCausalLM, MptForCausalLM) does not "
              "express");
}

void check_options_mapped(const GptConfig& c) {
  const GptConfig defaults;
#define KILN_CHECK_MAPPED(codec, field, default_value, flag, saved, hf, help) \
  if (model_option::Hf::hf == model_option::Hf::Unmapped && !(c.field == defaults.field)) refuse_unmapped(flag, #field);
  KILN_MODEL_OPTIONS(KILN_CHECK_MAPPED)
#undef KILN_CHECK_MAPPED
}

// A config.json number a float cannot hold (a rope_scaling factor of 1e308)
// arrives as inf, which meta.json would save as null and no --load accepts.
template <typename T>
void check_finite(const T& /*not a float*/, const char* /*field*/) {}
void check_finite(float v, const char* field) {
  if (!std::isfinite(v))
    throw Error(std::string("config.json: the value it gives kiln's ") + field +
                " is outside the range of a float (kiln's model config is 32-bit)");
}

// The config as imported: every float option finite, then validate().
const GptConfig& checked(const GptConfig& c) {
#define KILN_CHECK_FINITE(codec, field, ...) check_finite(c.field, #field);
  KILN_MODEL_OPTIONS(KILN_CHECK_FINITE)
#undef KILN_CHECK_FINITE
  c.validate();
  return c;
}

}  // namespace

namespace {

HfModel as_gpt2(const GptConfig& c, const std::map<std::string, SafeTensor>& kiln) {
  return {"GPT2LMHeadModel", gpt2_hf_config(c), gpt2_to_hf(c, kiln)};
}
HfModel as_llama(const GptConfig& c, const std::map<std::string, SafeTensor>& kiln) {
  return {"LlamaForCausalLM", llama_hf_config(c), llama_to_hf(c, kiln)};
}
HfModel as_mpt(const GptConfig& c, const std::map<std::string, SafeTensor>& kiln) {
  return {"MptForCausalLM", mpt_hf_config(c), mpt_to_hf(c, kiln)};
}

// The architectures kiln exports, each by the layer spec it expresses
// (trainer/model/layer_spec.h). The position slot tells them apart; the
// mapper's own check then names any other slot or option it cannot
// express (GPT-2 with RMSNorm, Llama without SwiGLU, ...).
struct HfArchitecture {
  LayerSpec spec;
  HfModel (*map)(const GptConfig&, const std::map<std::string, SafeTensor>&);
};
const HfArchitecture kHfArchitectures[] = {
    {{Normalization::LayerNorm, PositionEmbedding::LearnedAbsolute, MlpKind::Gelu}, as_gpt2},
    {{Normalization::RMSNorm, PositionEmbedding::Rope, MlpKind::SwiGlu}, as_llama},
    {{Normalization::LayerNorm, PositionEmbedding::Alibi, MlpKind::GeluErf}, as_mpt},
};

}  // namespace

HfModel kiln_to_hf(const GptConfig& cfg, const std::map<std::string, SafeTensor>& kiln) {
  check_options_mapped(cfg);
  const LayerSpec spec = layer_spec(cfg);
  for (const HfArchitecture& a : kHfArchitectures)
    if (a.spec.positions == spec.positions) return a.map(cfg, kiln);
  throw Error(std::string("the checkpoint's model uses --position-embedding-type ") + to_string(spec.positions) +
              ", which neither GPT2LMHeadModel (learned positions), LlamaForCausalLM (rope) nor MptForCausalLM "
              "(alibi) can express");
}

namespace {

// The architectures kiln imports, by config.json's model_type.
struct HfImporter {
  const char* model_type;
  GptConfig (*config)(const nlohmann::json&);
  ExpectedTensors (*tensors_needed)(const GptConfig&);
  std::map<std::string, SafeTensor> (*from_hf)(const GptConfig&, const std::map<std::string, SafeTensor>&);
};
const HfImporter kHfImporters[] = {
    {"gpt2", gpt2_config_from_hf, gpt2_hf_tensors, gpt2_from_hf},
    {"llama", llama_config_from_hf, llama_hf_tensors, llama_from_hf},
    {"mpt", mpt_config_from_hf, mpt_hf_tensors, mpt_from_hf},
};

const HfImporter& importer_for(const nlohmann::json& config) {
  const nlohmann::json type = config.contains("model_type") ? config.at("model_type") : nlohmann::json();
  for (const HfImporter& i : kHfImporters)
    if (type == i.model_type) return i;
  throw Error("config.json: model_type " + type.dump() +
              " is not supported; kiln imports \"gpt2\", \"llama\" and \"mpt\"");
}

}  // namespace

KilnModel hf_to_kiln(const nlohmann::json& config, const std::map<std::string, SafeTensor>& hf) {
  const HfImporter& i = importer_for(config);
  const GptConfig cfg = checked(i.config(config));
  return {cfg, i.from_hf(cfg, hf)};
}

ExpectedTensors hf_tensors_needed(const nlohmann::json& config) {
  const HfImporter& i = importer_for(config);
  return i.tensors_needed(checked(i.config(config)));
}

}  // namespace kiln::trainer
