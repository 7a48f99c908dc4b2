// The training loop: `kiln train` after its flags are parsed.
#pragma once

#include <nlohmann/json.hpp>

#include "trainer/dist/comm.h"
#include "trainer/train_config.h"

namespace kiln::trainer {

// Runs a whole training job; returns the process exit status. Throws
// kiln::Error for user errors (all detected before the first step where
// possible).
int train(const TrainConfig& cfg);
// The same, as one rank of a data-parallel job (cfg.data_parallel_size ==
// comm.size()); the single-process form above is this with one rank.
int train(const TrainConfig& cfg, dist::Comm& comm);

// The model configuration as stored in checkpoint metadata, and back.
nlohmann::json model_config_json(const GptConfig& cfg);
GptConfig model_config_from_json(const nlohmann::json& j);
// An integer field of checkpoint metadata (fallback when absent); throws
// kiln::Error when it is there but not an integer.
int64_t meta_integer(const nlohmann::json& meta, const char* key, int64_t fallback);

}  // namespace kiln::trainer
