// Checkpoints stay layout-free under pipeline parallelism: each stage holds
// only its layers, so before rank 0 writes the checkpoint every later stage
// sends it the full tensors (already gathered over its tensor-parallel
// group) of the parameters it owns. Loading needs nothing of the kind: each
// stage's ModelState takes its own parameters from the full checkpoint.
#pragma once

#include <map>
#include <string>

#include "trainer/checkpoint/safetensors.h"
#include "trainer/dist/comm.h"
#include "trainer/train_config.h"

namespace kiln::trainer {

// Collective over `stages` (one pipeline: rank = stage), whose members hold
// a stage's full tensors in `model` and `optimizer` (model parameters by
// name; optimizer moments as "<param>.exp_avg" / ".exp_avg_sq", empty under
// --no-save-optim). On stage 0 the maps end up holding every tensor of the
// model; a parameter two stages hold (a tied word embedding) is stage 0's.
void gather_pipeline_stages(const TrainConfig& cfg, dist::Comm& stages, std::map<std::string, SafeTensor>& model,
                            std::map<std::string, SafeTensor>& optimizer);

}  // namespace kiln::trainer
