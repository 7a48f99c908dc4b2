// What a training step's data-parallel collectives ask of whoever runs the
// step graphs (trainer/step.cpp, or the pipeline executor): the points at
// which a bucket's collective can start, or must have finished.
#pragma once

#include "graph/executor.h"

namespace kiln::trainer {

struct OverlapHooks {
  // --overlap-grad-reduce: with the last backward of each model chunk in a
  // step, the gradients it has written for the last time.
  graph::Executable::OutputsReady grads_final;
  // --overlap-param-gather: with the first forward of each model chunk in a
  // step, the parameters it is about to read.
  graph::Executable::InputsNeeded params_needed;
};

}  // namespace kiln::trainer
