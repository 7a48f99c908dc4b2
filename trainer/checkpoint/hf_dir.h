// A Hugging Face model directory on disk: config.json, generation_config.json
// and the weights as model.safetensors, or, above a shard size, as
// model-0000i-of-0000n.safetensors with model.safetensors.index.json
// ({"metadata": {"total_size"}, "weight_map": {tensor: file}}), as
// transformers' save_pretrained writes them.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "trainer/checkpoint/safetensors.h"

namespace kiln::trainer {

struct HfDir {
  nlohmann::json config;
  nlohmann::json generation_config;  // written only when an object
  std::map<std::string, SafeTensor> tensors;
  // Other files of the directory by name (the tokenizer's), written as given.
  std::map<std::string, std::string> files;
};

// "5GB", "500MB", "10KB" (powers of 1000, as transformers), "2GiB", "64MiB",
// "4KiB" (powers of 1024) or plain bytes. Throws a one-line kiln::Error.
int64_t parse_shard_size(const std::string& text);

// Writes into a temporary directory beside `dir` and renames it into place,
// so `dir` is either absent or complete. `dir` must not exist, or be an
// empty directory. Shards are filled in name order, a new one started when
// the next tensor would pass max_shard_bytes. Throws a one-line kiln::Error
// naming --output.
void write_hf_dir(const std::string& dir, const HfDir& content, int64_t max_shard_bytes);

// The tensors, name to shape, a reader takes from the weights, given
// config.json (kiln import passes hf_tensors_needed).
using TensorsNeeded = std::function<ExpectedTensors(const nlohmann::json& config)>;

// Reads config.json, then of the weights (single file or index + shards)
// only the tensors `needed` names, each header checked against their
// shapes before any payload is read; other tensors are skipped unread.
// Throws a one-line kiln::Error naming --input and the missing piece.
HfDir read_hf_dir(const std::string& dir, const TensorsNeeded& needed);

}  // namespace kiln::trainer
