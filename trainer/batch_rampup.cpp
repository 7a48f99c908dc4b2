#include "trainer/batch_rampup.h"

#include <cerrno>
#include <cstdlib>

#include "core/error.h"

namespace kiln::trainer {

namespace {

int64_t parse_word(const std::string& word, const char* what) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(word.c_str(), &end, 10);
  if (word.empty() || *end != '\0' || errno == ERANGE)
    throw Error(std::string("--rampup-batch-size: ") + what + " '" + word + "' is not an integer");
  return v;
}

}  // namespace

BatchRampup::BatchRampup(const std::vector<std::string>& words, int64_t global_batch_size, int64_t micro_times_dp)
    : global_(global_batch_size) {
  if (words.size() != 3)
    throw Error(
        "--rampup-batch-size takes 3 values (Megatron: expected the following format: --rampup-batch-size <start "
        "batch size> <batch size incerement> <ramp-up samples>)");
  start_ = parse_word(words[0], "start batch size");
  increment_ = parse_word(words[1], "batch size increment");
  samples_ = parse_word(words[2], "ramp-up samples");
  if (start_ <= 0) throw Error("--rampup-batch-size: the start batch size must be positive");
  if (increment_ <= 0) throw Error("--rampup-batch-size: the batch size increment must be positive");
  if (samples_ < 0) throw Error("--rampup-batch-size: the ramp-up samples must not be negative");
  const int64_t diff = global_ - start_;
  if (diff < 0)
    throw Error("--rampup-batch-size: expected global batch size (" + std::to_string(global_) +
                ") to be greater than or equal to start batch size (" + std::to_string(start_) +
                "); lower the start batch size");
  if (diff % increment_ != 0)
    throw Error("--rampup-batch-size: expected global batch size interval (" + std::to_string(diff) +
                ") to be divisible by global batch size increment (" + std::to_string(increment_) + ")");
  // Megatron checks each step's batch as the ramp reaches it; checking the
  // start and the increment up front finds the same mistake before training.
  for (const auto& [value, name] : {std::pair{start_, "start batch size"}, std::pair{increment_, "increment"}})
    if (value % micro_times_dp != 0)
      throw Error("--rampup-batch-size: " + std::string(name) + " " + std::to_string(value) +
                  " is not divisible by micro-batch-size times data parallel size (" + std::to_string(micro_times_dp) +
                  "), so a ramp batch would be (Megatron: current global batch size is not divisible by "
                  "micro-batch-size times data parallel size)");
  // START = GBS leaves no increments: every step takes GBS (Megatron divides
  // by zero there).
  const int64_t increments = diff / increment_;
  if (increments > 0) samples_per_increment_ = static_cast<double>(samples_) / static_cast<double>(increments);
}

int64_t BatchRampup::global_batch(int64_t consumed) const {
  if (!active() || consumed > samples_ || start_ == global_) return global_;
  // SAMPLES = 0: only the very first step (consumed = 0) takes START.
  if (samples_per_increment_ == 0) return start_;
  // As Megatron: int(consumed / samples_per_increment) in double precision.
  const auto steps = static_cast<int64_t>(static_cast<double>(consumed) / samples_per_increment_);
  return start_ + steps * increment_;
}

int64_t BatchRampup::train_iters(int64_t train_samples) const {
  if (start_ == global_) return train_samples / global_;  // no ramp to walk
  int64_t iterations = 0, consumed = 0;
  while (consumed <= samples_ && consumed <= train_samples) {
    consumed += global_batch(consumed);
    ++iterations;
  }
  if (train_samples > consumed) iterations += (train_samples - consumed) / global_;
  return iterations;
}

int64_t BatchRampup::consumed_after(int64_t iterations) const {
  int64_t consumed = 0, i = 0;
  for (; i < iterations && consumed <= samples_; ++i) consumed += global_batch(consumed);
  return consumed + (iterations - i) * global_;  // past the ramp: whole global batches
}

}  // namespace kiln::trainer
