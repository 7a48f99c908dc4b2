// kiln's MPT-style model (ALiBi, no linear biases, LayerNorm without bias,
// exact GELU MLP at 4x, tied embeddings, optional --clip-qkv) <-> Hugging
// Face's MptForCausalLM: the config fields and the tensor mapping, both
// directions (docs/CHECKPOINTS.md). Linear weights are [out, in] on both
// sides (torch.nn.Linear), so nothing is transposed; kiln's fused QKV rows
// are Megatron's per-head interleaved [H, 3, D], HF's Wqkv rows are Q|K|V
// blocked [3, H, D].
//
// What transformers' MptForCausalLM fixes, whatever config.json says (its
// modeling_mpt.py): the MLP is 4 x d_model (expansion_ratio is not read), no
// layer has a bias (no_bias is not read), ALiBi is always on and built with
// alibi_bias_max 8 (attn_config.alibi_bias_max is not passed), and
// attn_config.qk_ln is not implemented. kiln refuses a model or config.json
// that differs from those, so both sides compute the same logits.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "trainer/checkpoint/safetensors.h"
#include "trainer/model/gpt.h"

namespace kiln::trainer {

// Throws a one-line kiln::Error naming the first option of `cfg` that HF's
// MptForCausalLM cannot express (learned or rotary positions, RMSNorm, a
// LayerNorm bias, GELU(tanh), SwiGLU, grouped-query attention, biases,
// --qk-layernorm, an untied output layer, ...).
void check_mpt_expressible(const GptConfig& cfg);
// config.json for MptForCausalLM; calls check_mpt_expressible first.
nlohmann::json mpt_hf_config(const GptConfig& cfg);

// The model from an HF config.json with model_type "mpt"; throws a one-line
// kiln::Error naming a field kiln (or HF itself) would not honour.
GptConfig mpt_config_from_hf(const nlohmann::json& config);

// kiln's model tensors to HF's F32 tensors.
std::map<std::string, SafeTensor> mpt_to_hf(const GptConfig& cfg, const std::map<std::string, SafeTensor>& kiln);

// The HF tensors, name to shape, a model of `cfg` is imported from: what
// kiln import reads from the safetensors files, checked before any payload.
ExpectedTensors mpt_hf_tensors(const GptConfig& cfg);

// HF tensors (F32, F16 or BF16) to kiln's F32 tensors. Throws a one-line
// kiln::Error naming a missing tensor or one of the wrong shape.
std::map<std::string, SafeTensor> mpt_from_hf(const GptConfig& cfg, const std::map<std::string, SafeTensor>& hf);

}  // namespace kiln::trainer
