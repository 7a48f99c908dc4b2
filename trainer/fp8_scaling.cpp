#include "trainer/fp8_scaling.h"

#include <cmath>
#include <limits>

#include "core/error.h"

namespace kiln::trainer {

Fp8AmaxAlgo parse_fp8_amax_algo(const std::string& text) {
  if (text == "max") return Fp8AmaxAlgo::Max;
  if (text == "most_recent") return Fp8AmaxAlgo::MostRecent;
  throw Error("--fp8-amax-compute-algo " + text + ": give max or most_recent");
}

float fp8_scale_from_amax(float amax, float fp8_max, int margin, float previous) {
  if (!std::isfinite(amax) || !(amax > 0.0f)) return previous;
  // TE computes fp8_max * 2^-margin once, in f32, then divides.
  const float scaled_max = fp8_max * std::ldexp(1.0f, -margin);
  const float scale = scaled_max / amax;
  return std::isinf(scale) ? std::numeric_limits<float>::max() : scale;
}

float fp8_current_scale(float amax, float fp8_max) {
  if (std::isinf(amax) || amax == 0.0f) return 1.0f;
  const float scale = fp8_max / amax;
  if (std::isnan(scale)) return 1.0f;
  return std::isinf(scale) ? std::numeric_limits<float>::max() : scale;
}

Fp8DelayedScaling::Fp8DelayedScaling(int64_t history_len) {
  if (history_len < 1) throw Error("--fp8-amax-history-len must be at least 1, got " + std::to_string(history_len));
  history_.assign(static_cast<size_t>(history_len), 0.0f);
}

void Fp8DelayedScaling::record(float amax) { history_[0] = std::fmax(history_[0], amax); }

void Fp8DelayedScaling::update(Fp8AmaxAlgo algo, float fp8_max, int margin) {
  const float last = history_[0];
  float largest = 0.0f;
  for (const float a : history_) largest = std::fmax(largest, a);
  const size_t L = history_.size();
  for (size_t i = 0; i + 1 < L; ++i) history_[i] = history_[i + 1];
  history_[L - 1] = last;
  history_[0] = 0.0f;  // with L = 1 the slot that just took `last` restarts too, as TE's
  scale_ = fp8_scale_from_amax(algo == Fp8AmaxAlgo::Max ? largest : last, fp8_max, margin, scale_);
  scale_inv_ = 1.0f / scale_;
}

void Fp8DelayedScaling::restore(const std::vector<float>& history, float scale) {
  if (history.size() != history_.size())
    throw Error("FP8 amax history of " + std::to_string(history.size()) + " intervals in the checkpoint, but " +
                "--fp8-amax-history-len " + std::to_string(history_.size()) + "; resume with the checkpoint's length");
  if (!std::isfinite(scale) || !(scale > 0.0f))
    throw Error("FP8 scale " + std::to_string(scale) + " in the checkpoint is not a positive finite number");
  history_ = history;
  scale_ = scale;
  scale_inv_ = 1.0f / scale;
}

}  // namespace kiln::trainer
