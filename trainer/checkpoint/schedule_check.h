// Megatron's OptimizerParamScheduler on resume (megatron/core/
// optimizer_param_scheduler.py, _check_and_set and load_state_dict): the lr
// and weight-decay schedule a checkpoint was trained with must match the
// flags of the run resuming it, or the run stops with Megatron's reason,
// unless --override-opt_param-scheduler (the flags win) or
// --use-checkpoint-opt_param-scheduler (the checkpoint wins) is given.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>

#include "trainer/train_config.h"

namespace kiln::trainer {

// The scheduler's state_dict for this run, in Megatron's units: steps count
// samples (iterations x --global-batch-size without --train-samples), the
// weight decay is constant (start = end = --weight-decay), and num_steps is
// the consumed samples. Checkpoints save it as meta.json "opt_param_scheduler".
nlohmann::json opt_param_scheduler_state(const TrainConfig& cfg, int64_t consumed_samples);

// On a resume that loads the scheduler (not --finetune, not --no-load-optim)
// from a checkpoint that saved one, compares it with the flags' in Megatron's
// order and throws Megatron's message on the first difference; under
// --use-checkpoint-opt_param-scheduler sets cfg's schedule to the
// checkpoint's. Older checkpoints without the record pass unchecked.
void check_resume_schedule(TrainConfig& cfg);

}  // namespace kiln::trainer
