// The model configuration stored in a checkpoint's meta.json, so that
// `kiln generate` and a resumed run rebuild the model without model flags.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "trainer/model/gpt.h"

namespace kiln::trainer {

// Every architecture option, under its own key (the layout, tensor
// parallelism, is not stored: checkpoints hold full tensors).
nlohmann::json model_config_json(const GptConfig& cfg);
// The inverse. A key an older kiln did not write takes GPT-2's value
// (learned positions, LayerNorm, tied output layer, biases), so its
// checkpoints load as they always did. Throws kiln::Error naming the key
// for a value of the wrong type or outside its choices.
GptConfig model_config_from_json(const nlohmann::json& j);
// What keeps a run from loading a checkpoint of `saved`'s model: each key
// whose value differs, as `"key":saved (this run: wanted)`; empty when it
// can. init_method_std is left out: it only draws the initial weights,
// which a load replaces.
std::vector<std::string> model_config_differences(const GptConfig& saved, const GptConfig& wanted);
// An integer field of checkpoint metadata (fallback when absent); throws
// kiln::Error when it is there but not an integer.
int64_t meta_integer(const nlohmann::json& meta, const char* key, int64_t fallback);

}  // namespace kiln::trainer
