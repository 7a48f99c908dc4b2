// Log lines in Megatron-LM's format, so existing log parsers and habits
// carry over, plus a throughput field in tokens/s.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace kiln::trainer {

struct IterationLog {
  int64_t iteration = 0;
  int64_t train_iters = 0;
  int64_t consumed_samples = 0;
  double ms_per_iteration = 0;
  double tokens_per_second = 0;
  // --log-throughput: Megatron's model TFLOP/s per GPU (report/model_flops.h).
  std::optional<double> tflops_per_gpu;
  double learning_rate = 0;
  std::optional<double> decoupled_learning_rate;  // --decoupled-lr
  int64_t global_batch_size = 0;
  // Absent when every iteration of the interval was skipped: Megatron then
  // leaves the fields out, and a 0 would read as a perfect loss.
  std::optional<double> lm_loss;
  // With --bf16 or --fp16 (Megatron prints it for every run; kiln's fp32 line
  // stays as it was): the loss scale after the last iteration, 1 for bf16.
  std::optional<double> loss_scale;
  std::optional<double> grad_norm;
  int64_t skipped = 0;
  int64_t nan = 0;
};

// Losses and norms of the iterations since the last log line.
struct IntervalStats {
  int64_t iterations = 0;  // all iterations, skipped ones included
  int64_t counted = 0;     // iterations whose loss counts
  double loss_sum = 0, norm_sum = 0;
  int64_t skipped = 0, nan = 0;
  int64_t samples = 0;  // trained on, skipped iterations included (the batch may ramp up)
  void add(double loss, double norm) {
    ++counted;
    loss_sum += loss;
    norm_sum += norm;
  }
  std::optional<double> mean_loss() const {
    return counted ? std::optional(loss_sum / static_cast<double>(counted)) : std::nullopt;
  }
  std::optional<double> mean_norm() const {
    return counted ? std::optional(norm_sum / static_cast<double>(counted)) : std::nullopt;
  }
};

std::string megatron_timestamp();

// " [2026-11-22 10:00:00] iteration       10/     300 | consumed samples: ..."
std::string format_iteration(const IterationLog& l);
nlohmann::json iteration_json(const IterationLog& l);

// Megatron's validation block (dashed rules around the loss and PPL line).
std::string format_validation(int64_t iteration, double loss);

}  // namespace kiln::trainer
