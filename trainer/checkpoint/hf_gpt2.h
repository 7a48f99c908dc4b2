// kiln's GPT-2 model <-> Hugging Face's GPT2LMHeadModel: the config fields
// and the tensor name/layout mapping, both directions (docs/CHECKPOINTS.md).
// Linear weights: kiln stores [out, in] (Megatron, torch.nn.Linear); HF's
// GPT-2 uses Conv1D, [in, out], so every projection is transposed. The fused
// QKV: kiln's output rows are Megatron's per-head interleaved [H, 3, D];
// HF's c_attn columns are blocked [3, H, D] (all of Q, then K, then V).
// The LM head is tied to transformer.wte.weight and not stored.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "trainer/checkpoint/safetensors.h"
#include "trainer/model/gpt.h"

namespace kiln::trainer {

// config.json for GPT2LMHeadModel.
// Throws a one-line kiln::Error naming the first option of `cfg` that HF's
// GPT-2 cannot express (RMSNorm, SwiGLU, GQA, RoPE, ...).
void check_gpt2_expressible(const GptConfig& cfg);
// Calls check_gpt2_expressible first.
nlohmann::json gpt2_hf_config(const GptConfig& cfg);

// The model from an HF config.json; throws a one-line kiln::Error for
// another model_type or a field kiln cannot express (e.g. another activation).
GptConfig gpt2_config_from_hf(const nlohmann::json& config);

// kiln's F32 model tensors (as in model.safetensors) to HF's F32 tensors.
std::map<std::string, SafeTensor> gpt2_to_hf(const GptConfig& cfg, const std::map<std::string, SafeTensor>& kiln);

// The HF tensors, name to shape, a model of `cfg` is imported from: what
// kiln import reads from the safetensors files, checked before any payload.
ExpectedTensors gpt2_hf_tensors(const GptConfig& cfg);

// HF tensors (F32, F16 or BF16) to kiln's F32 tensors. Throws a one-line
// kiln::Error naming a missing tensor or one of the wrong shape.
std::map<std::string, SafeTensor> gpt2_from_hf(const GptConfig& cfg, const std::map<std::string, SafeTensor>& hf);

}  // namespace kiln::trainer
