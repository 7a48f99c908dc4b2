// The model configuration stored in a checkpoint's meta.json, so that
// `kiln generate` and a resumed run rebuild the model without model flags.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "trainer/model/gpt.h"

namespace kiln::trainer {

// Every architecture option, under its own key: the architecture part of
// a config alone (the layout and training choices are not stored:
// checkpoints hold full tensors, and a run chooses how it trains).
nlohmann::json model_config_json(const ModelArchitecture& arch);
// The inverse. A key an older kiln did not write takes GPT-2's value
// (learned positions, LayerNorm, tied output layer, biases), so its
// checkpoints load as they always did. Throws kiln::Error naming `file`
// (the meta.json path where the caller knows it), the key and what it
// expected for a missing config, a value of the wrong type or outside its
// choices, or for an architecture GptConfig::validate refuses.
ModelArchitecture model_config_from_json(const nlohmann::json& j, const std::string& file = "checkpoint meta.json");
// What keeps a run from loading a checkpoint of `saved`'s model: each key
// whose value differs, as `"key":saved (this run: wanted)`; empty when it
// can. init_method_std is left out: it only draws the initial weights,
// which a load replaces.
std::vector<std::string> model_config_differences(const ModelArchitecture& saved, const ModelArchitecture& wanted);
// An integer field of checkpoint metadata (fallback when absent); throws
// kiln::Error when it is there but not an integer.
int64_t meta_integer(const nlohmann::json& meta, const char* key, int64_t fallback);

}  // namespace kiln::trainer
