// Checkpoints of a run: --load checked against this model before any device
// work, the progress it resumes from, and saves at --save-interval, at the
// last iteration and when a signal or trigger file asks (trainer/job_control.h).
#pragma once

#include "trainer/checkpoint/checkpoint_io.h"
#include "trainer/job_control.h"
#include "trainer/setup.h"

namespace kiln::trainer {

// Loads --load and checks that it belongs to this model, so a bad checkpoint
// fails in milliseconds.
LoadedCheckpoint load_and_check(const TrainConfig& cfg);
// The part of load_and_check that needs only meta.json: the model config and
// the tokenizer must be the run's.
void check_same_model(const LoadedCheckpoint& ck, const TrainConfig& cfg);
// Writes a loaded checkpoint into the device state, as --finetune and
// --no-load-optim/--no-load-rng say; returns the progress to go on from.
Progress resume_from(const LoadedCheckpoint& ck, ModelState& state, const TrainConfig& cfg);

class Checkpointer {
 public:
  explicit Checkpointer(Setup& run) : run_(run) {}
  // Saves when the iteration just finished is due or `request` asks (and
  // --save is given); returns whether it saved.
  bool maybe_save(const JobControl::Decision& request);

 private:
  void save(int64_t iteration);

  Setup& run_;
};

}  // namespace kiln::trainer
