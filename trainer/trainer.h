// The training loop: `kiln train` after its flags are parsed.
#pragma once

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

}  // namespace kiln::trainer
