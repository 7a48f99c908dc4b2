// Which Hugging Face architecture a kiln model leaves as, and which one an
// HF directory comes in as (kiln export / kiln import --format hf): GPT-2
// for learned positions (hf_gpt2.h), Llama for rotary ones (hf_llama.h),
// MPT for ALiBi (hf_mpt.h).
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "trainer/checkpoint/safetensors.h"
#include "trainer/model/gpt.h"

namespace kiln::trainer {

struct HfModel {
  std::string architecture;  // "GPT2LMHeadModel", "LlamaForCausalLM", "MptForCausalLM"
  nlohmann::json config;     // config.json
  std::map<std::string, SafeTensor> tensors;
};

// kiln's F32 model tensors as the HF architecture of cfg. Throws a one-line
// kiln::Error naming an option no supported architecture can express.
HfModel kiln_to_hf(const GptConfig& cfg, const std::map<std::string, SafeTensor>& kiln);

struct KilnModel {
  GptConfig config;
  std::map<std::string, SafeTensor> tensors;  // F32, kiln's names
};

// From config.json's model_type; throws a one-line kiln::Error naming an
// unsupported model_type and the ones kiln reads.
KilnModel hf_to_kiln(const nlohmann::json& config, const std::map<std::string, SafeTensor>& hf);

// The HF tensors, name to shape, that hf_to_kiln(config, ...) reads: what
// kiln import takes from the safetensors files, checking each header
// against it before reading any payload. Throws as hf_to_kiln does for a
// config it cannot import.
ExpectedTensors hf_tensors_needed(const nlohmann::json& config);

}  // namespace kiln::trainer
