#include "trainer/checkpoint/hf_architecture.h"

#include "core/error.h"
#include "trainer/checkpoint/hf_gpt2.h"
#include "trainer/checkpoint/hf_llama.h"
#include "trainer/checkpoint/hf_mpt.h"

namespace kiln::trainer {

HfModel kiln_to_hf(const GptConfig& cfg, const std::map<std::string, SafeTensor>& kiln) {
  switch (cfg.position_embedding_type) {
    case PositionEmbedding::LearnedAbsolute: return {"GPT2LMHeadModel", gpt2_hf_config(cfg), gpt2_to_hf(cfg, kiln)};
    case PositionEmbedding::Rope: return {"LlamaForCausalLM", llama_hf_config(cfg), llama_to_hf(cfg, kiln)};
    case PositionEmbedding::Alibi: return {"MptForCausalLM", mpt_hf_config(cfg), mpt_to_hf(cfg, kiln)};
    case PositionEmbedding::None: break;
  }
  throw Error(
      "the checkpoint's model uses --position-embedding-type none, which neither GPT2LMHeadModel (learned "
      "positions), LlamaForCausalLM (rope) nor MptForCausalLM (alibi) can express");
}

KilnModel hf_to_kiln(const nlohmann::json& config, const std::map<std::string, SafeTensor>& hf) {
  const nlohmann::json type = config.contains("model_type") ? config.at("model_type") : nlohmann::json();
  if (type == "gpt2") {
    const GptConfig cfg = gpt2_config_from_hf(config);
    return {cfg, gpt2_from_hf(cfg, hf)};
  }
  if (type == "llama") {
    const GptConfig cfg = llama_config_from_hf(config);
    return {cfg, llama_from_hf(cfg, hf)};
  }
  if (type == "mpt") {
    const GptConfig cfg = mpt_config_from_hf(config);
    return {cfg, mpt_from_hf(cfg, hf)};
  }
  throw Error("config.json: model_type " + type.dump() +
              " is not supported; kiln imports \"gpt2\", \"llama\" and \"mpt\"");
}

}  // namespace kiln::trainer
