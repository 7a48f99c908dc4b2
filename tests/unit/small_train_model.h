// A 4-layer `kiln train` model with extra flags, parsed and finalized as
// kiln train does: for unit tests of how flags set the model.
#pragma once

#include <string>
#include <vector>

#include "core/error.h"
#include "trainer/flags.h"
#include "trainer/train_config.h"

namespace kiln::trainer::testing {

// Throws what parse or finalize throws.
inline GptConfig model_with(const std::vector<std::string>& extra) {
  std::vector<std::string> args = {"--num-layers",  "4",  "--hidden-size",      "32", "--num-attention-heads", "4",
                                   "--seq-length",  "16", "--micro-batch-size", "2",  "--train-iters",         "1",
                                   "--num-threads", "1"};
  args.insert(args.end(), extra.begin(), extra.end());
  TrainConfig cfg;
  Flags flags("train");
  cfg.register_flags(flags);
  flags.parse(args);
  cfg.finalize(flags);
  return cfg.model;
}

// The error model_with(extra) throws, or "" if it succeeds.
inline std::string error_of(const std::vector<std::string>& extra) {
  try {
    model_with(extra);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace kiln::trainer::testing
