// The per-tensor scales of FP8 training, as Transformer Engine computes
// them (Megatron's --fp8-recipe): a tensor x is cast as fp8(x * scale)
// (kiln/fp8.h), and a GEMM of two cast tensors multiplies its result by the
// product of their scale_inv = 1 / scale.
//   delayed     (TE's DelayedScaling, Megatron's default): the scale comes
//               from a history of past amaxes (max |x| of each interval),
//               updated after the interval with TE's amax_and_scale_update;
//   tensorwise  (TE's Float8CurrentScaling): the scale comes from the
//               tensor's own amax just before its cast.
// Host-side and per tensor: each scaled tensor of the model owns one
// Fp8DelayedScaling, whose history and scale a checkpoint keeps.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::trainer {

// --fp8-amax-compute-algo: the amax the scale is computed from.
enum class Fp8AmaxAlgo {
  Max,        // the largest amax in the history window (TE's default)
  MostRecent  // the last interval's amax
};
// "max" or "most_recent"; throws kiln::Error naming the flag otherwise.
Fp8AmaxAlgo parse_fp8_amax_algo(const std::string& text);

// fp8_max x 2^-margin / amax when amax is finite and positive (an infinite
// quotient becomes FLT_MAX, so the scale stays finite); otherwise
// `previous`: an interval without data or with an overflow keeps its scale.
float fp8_scale_from_amax(float amax, float fp8_max, int margin, float previous);

// TE's current scaling (compute_scale_from_amax with its recipe's
// defaults: no epsilon floor, no power-of-2 rounding): fp8_max / amax, 1 for
// an amax of 0 or infinity, FLT_MAX for an infinite quotient, 1 for NaN.
float fp8_current_scale(float amax, float fp8_max);

class Fp8DelayedScaling {
 public:
  // A history of `history_len` (>= 1) intervals, all 0, and scale 1.
  explicit Fp8DelayedScaling(int64_t history_len);

  // A cast of the tensor in the current interval saw this amax: slot 0 keeps
  // the largest of the interval's casts, with CUDA's fmaxf (as TE's amax
  // reductions), which passes over a NaN.
  void record(float amax);

  // The end of an interval (TE's amax_and_scale_update): the amax the scale
  // is computed from is the largest in the history (Max, fmaxf again) or
  // slot 0 (MostRecent); the history then rotates left by one (slot L-1
  // takes slot 0's amax, slot i takes slot i+1's) and slot 0 restarts at 0,
  // TE's layout; the scale and scale_inv follow fp8_scale_from_amax.
  void update(Fp8AmaxAlgo algo, float fp8_max, int margin);

  float scale() const { return scale_; }
  float scale_inv() const { return scale_inv_; }
  const std::vector<float>& history() const { return history_; }
  // From a checkpoint: the history (its length must match) and the scale.
  void restore(const std::vector<float>& history, float scale);

 private:
  std::vector<float> history_;
  float scale_ = 1.0f, scale_inv_ = 1.0f;
};

}  // namespace kiln::trainer
