// Megatron's --step-batch-size-schedule "THRESHOLD:BS THRESHOLD:BS ..."
// (StepBatchsizeNumMicroBatchesCalculator, megatron/core/
// num_microbatches_calculator.py): the global batch of a step is the BS of
// the last entry whose THRESHOLD the consumed samples have reached.
// Thresholds are tokens (Megatron passes --seq-length, so each becomes
// THRESHOLD // seq-length samples); both numbers take the suffixes K, M, B, T
// (1e3 ... 1e12) and decimals ("2.4B"); entries are separated by spaces or
// commas. As the ramp, the batch follows from the consumed samples, so a
// resumed run continues the schedule where it stopped.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace kiln::trainer {

class StepBatchSchedule {
 public:
  StepBatchSchedule() = default;  // no schedule
  // Parses and checks the flag's text (Megatron's rules: the first threshold
  // is 0, thresholds strictly increase, batch sizes are positive); throws
  // kiln::Error in one line.
  StepBatchSchedule(const std::string& text, int64_t seq_length);

  bool active() const { return !entries_.empty(); }
  const std::string& text() const { return text_; }
  // (threshold in samples, global batch), by threshold.
  const std::vector<std::pair<int64_t, int64_t>>& entries() const { return entries_; }
  int64_t last_batch() const { return entries_.back().second; }  // Megatron's global batch size
  int64_t max_batch() const;
  int64_t global_batch(int64_t consumed) const;
  // Megatron's update_train_iters: steps until at least `train_samples`
  // are consumed (the last step may end past it).
  int64_t train_iters(int64_t train_samples) const;
  int64_t consumed_after(int64_t iterations) const;

 private:
  std::string text_;
  std::vector<std::pair<int64_t, int64_t>> entries_;
};

}  // namespace kiln::trainer
