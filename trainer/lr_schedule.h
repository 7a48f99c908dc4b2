// Learning-rate schedule with Megatron-LM's semantics (OptimizerParamScheduler
// .get_lr), so --lr, --min-lr, --lr-warmup-iters, --lr-decay-iters and
// --lr-decay-style produce the same curve as in Megatron.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::trainer {

class LrSchedule {
 public:
  // style: one of valid_styles(). decay_iters is --lr-decay-iters, which the
  // caller defaults to --train-iters. Throws kiln::Error on an unknown style
  // or inconsistent values, naming the flags.
  LrSchedule(double max_lr, double min_lr, int64_t warmup_iters, int64_t decay_iters, std::string style);

  // The learning rate after `iteration` optimizer steps have been taken,
  // i.e. the rate the next step uses. Like Megatron, warmup ramps from 0, so
  // with warmup the very first step runs at lr 0.
  double lr(int64_t iteration) const;

  double max_lr() const { return max_lr_; }
  double min_lr() const { return min_lr_; }
  int64_t warmup_iters() const { return warmup_iters_; }
  int64_t decay_iters() const { return decay_iters_; }
  const std::string& style() const { return style_; }

  static const std::vector<std::string>& valid_styles();

 private:
  double max_lr_, min_lr_;
  int64_t warmup_iters_, decay_iters_;
  std::string style_;
};

}  // namespace kiln::trainer
