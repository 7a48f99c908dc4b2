// kiln's Llama-style model (RMSNorm, SwiGLU, RoPE, grouped-query attention,
// tied or untied output layer) <-> Hugging Face's LlamaForCausalLM: the
// config fields and the tensor mapping, both directions (docs/CHECKPOINTS.md).
// Linear weights are [out, in] on both sides (torch.nn.Linear), so nothing
// is transposed. kiln's fused QKV rows are Megatron-core's per-group layout
// (each query group's q heads, then its k head, then its v head); HF keeps
// q_proj, k_proj and v_proj apart, each head-major. kiln's fc1 rows are
// [gate; up]; HF has gate_proj and up_proj.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "trainer/checkpoint/safetensors.h"
#include "trainer/model/gpt.h"

namespace kiln::trainer {

// Throws a one-line kiln::Error naming the first option of `cfg` that HF's
// LlamaForCausalLM cannot express (LayerNorm, learned or ALiBi positions,
// QK-LayerNorm, --clip-qkv, ...).
void check_llama_expressible(const GptConfig& cfg);
// config.json for LlamaForCausalLM; calls check_llama_expressible first.
nlohmann::json llama_hf_config(const GptConfig& cfg);

// The model from an HF config.json with model_type "llama"; throws a
// one-line kiln::Error naming a field kiln cannot express (another
// hidden_act, another rope_scaling, attention_bias != mlp_bias, ...).
// The result uses rotate-half rotary pairing (--rotary-interleaved off).
GptConfig llama_config_from_hf(const nlohmann::json& config);

// kiln's model tensors to HF's F32 tensors.
std::map<std::string, SafeTensor> llama_to_hf(const GptConfig& cfg, const std::map<std::string, SafeTensor>& kiln);

// The HF tensors, name to shape, a model of `cfg` is imported from: what
// kiln import reads from the safetensors files, checked before any payload.
ExpectedTensors llama_hf_tensors(const GptConfig& cfg);

// HF tensors (F32, F16 or BF16) to kiln's F32 tensors. Throws a one-line
// kiln::Error naming a missing tensor or one of the wrong shape.
std::map<std::string, SafeTensor> llama_from_hf(const GptConfig& cfg, const std::map<std::string, SafeTensor>& hf);

}  // namespace kiln::trainer
