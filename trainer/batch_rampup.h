// Megatron's --rampup-batch-size START INCREMENT SAMPLES
// (RampupBatchsizeNumMicroBatchesCalculator): the global batch starts at
// START and grows by INCREMENT each time another SAMPLES / ((GBS - START) /
// INCREMENT) samples have been consumed, until it is --global-batch-size
// (reached once more than SAMPLES samples are consumed). The batch of a step
// follows from the samples consumed before it, so a resumed run (which
// restores the consumed samples) continues the ramp where it stopped.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::trainer {

class BatchRampup {
 public:
  BatchRampup() = default;  // no ramp: every step takes --global-batch-size
  // Checks the flag's words against --global-batch-size and the micro-batch
  // x data-parallel size every ramp value must be a multiple of; throws
  // kiln::Error in one line with Megatron's wording.
  BatchRampup(const std::vector<std::string>& words, int64_t global_batch_size, int64_t micro_times_dp);

  bool active() const { return start_ > 0; }
  int64_t start() const { return start_; }
  int64_t increment() const { return increment_; }
  int64_t samples() const { return samples_; }
  // The global batch of the step that begins after `consumed` samples.
  int64_t global_batch(int64_t consumed) const;
  // Megatron's update_train_iters: the iterations that train `train_samples`
  // (the ramp's steps while at most SAMPLES are consumed, then whole
  // --global-batch-size steps; a partial last batch is dropped).
  int64_t train_iters(int64_t train_samples) const;
  // The samples `iterations` steps consume: Megatron's last ramp step may
  // end past --train-samples, and the data must hold it.
  int64_t consumed_after(int64_t iterations) const;

 private:
  int64_t start_ = 0, increment_ = 0, samples_ = 0, global_ = 0;
  double samples_per_increment_ = 0;
};

}  // namespace kiln::trainer
