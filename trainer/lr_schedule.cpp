#include "trainer/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <sstream>

#include "core/error.h"

namespace kiln::trainer {

const std::vector<std::string>& LrSchedule::valid_styles() {
  static const std::vector<std::string> styles = {"constant", "linear", "cosine", "inverse-square-root"};
  return styles;
}

LrSchedule::LrSchedule(double max_lr, double min_lr, int64_t warmup_iters, int64_t decay_iters, std::string style)
    : max_lr_(max_lr),
      min_lr_(min_lr),
      warmup_iters_(warmup_iters),
      decay_iters_(decay_iters),
      style_(std::move(style)) {
  const auto& styles = valid_styles();
  if (std::find(styles.begin(), styles.end(), style_) == styles.end()) {
    std::string list;
    for (const auto& s : styles) list += (list.empty() ? "" : ", ") + s;
    throw Error("unknown --lr-decay-style '" + style_ + "'; valid styles: " + list);
  }
  auto fmt = [](double v) {
    std::ostringstream o;
    o << v;
    return o.str();
  };
  if (!std::isfinite(max_lr_) || max_lr_ < 0) throw Error("--lr must be a finite number >= 0, got " + fmt(max_lr_));
  if (!std::isfinite(min_lr_) || min_lr_ < 0) throw Error("--min-lr must be a finite number >= 0, got " + fmt(min_lr_));
  if (min_lr_ > max_lr_) throw Error("--min-lr (" + fmt(min_lr_) + ") must not exceed --lr (" + fmt(max_lr_) + ")");
  if (warmup_iters_ < 0) throw Error("--lr-warmup-iters must be >= 0, got " + std::to_string(warmup_iters_));
  if (decay_iters_ <= 0)
    throw Error("--lr-decay-iters (defaults to --train-iters) must be > 0, got " + std::to_string(decay_iters_));
  // Megatron asserts this for every style; for linear/cosine it also keeps
  // the decay ratio's denominator non-zero.
  if (warmup_iters_ >= decay_iters_)
    throw Error("--lr-warmup-iters (" + std::to_string(warmup_iters_) + ") must be less than --lr-decay-iters (" +
                std::to_string(decay_iters_) + ", defaults to --train-iters)");
}

double LrSchedule::lr(int64_t iteration) const {
  const double step = static_cast<double>(std::max<int64_t>(iteration, 0));
  if (warmup_iters_ > 0 && iteration <= warmup_iters_) return max_lr_ * step / static_cast<double>(warmup_iters_);
  if (style_ == "constant") return max_lr_;
  // Megatron applies inverse-square-root before the decay-iters cutoff; it
  // decays forever, floored at min_lr.
  if (style_ == "inverse-square-root") {
    const double w = static_cast<double>(std::max<int64_t>(warmup_iters_, 1));
    const double n = std::max(step, 1.0);
    return std::max(min_lr_, max_lr_ * std::sqrt(w) / std::sqrt(n));
  }
  if (iteration > decay_iters_) return min_lr_;
  const double ratio =
      static_cast<double>(iteration - warmup_iters_) / static_cast<double>(decay_iters_ - warmup_iters_);
  const double coeff = style_ == "linear" ? 1.0 - ratio : 0.5 * (std::cos(std::numbers::pi * ratio) + 1.0);
  return min_lr_ + coeff * (max_lr_ - min_lr_);
}

}  // namespace kiln::trainer
