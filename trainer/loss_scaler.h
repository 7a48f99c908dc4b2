// fp16's loss scale, with the rules of Megatron-LM's grad scalers
// (megatron/core/optimizer/grad_scaler.py): a static --loss-scale never
// changes; the dynamic one starts at --initial-loss-scale, and
//  - an iteration whose gradients hold an inf or NaN counts down the
//    hysteresis tracker and resets the growth tracker; once the hysteresis
//    tracker reaches 0 every such iteration halves the scale (not below
//    --min-loss-scale);
//  - --loss-scale-window clean iterations in a row double the scale and
//    reset the hysteresis tracker to --hysteresis.
// Without --fp16 the scale is 1 and never changes.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "trainer/mixed_precision.h"

namespace kiln::trainer {

// Saved in checkpoints (meta.json "optimizer"."grad_scaler", Megatron's
// grad_scaler state: scale, growth_tracker, hysteresis_tracker).
struct LossScaleState {
  double scale = 1.0;
  int64_t growth_tracker = 0;
  int64_t hysteresis_tracker = 0;
};

// The state a run starts from.
LossScaleState initial_loss_scale(const MixedPrecision& precision);

// Whether the scale follows the overflows (--fp16 without --loss-scale).
bool dynamic_loss_scale(const MixedPrecision& precision);

// One iteration's outcome: `found_inf` when any rank's gradients overflowed.
void update_loss_scale(LossScaleState& state, const MixedPrecision& precision, bool found_inf);

// Whether an overflow could still lower the scale: false for a static scale
// or a dynamic one at --min-loss-scale (repeated overflows there are the
// model's, not the scale's).
bool loss_scale_can_drop(const LossScaleState& state, const MixedPrecision& precision);

nlohmann::json loss_scale_json(const LossScaleState& state);
// Throws kiln::Error naming `where` for a malformed or impossible record.
LossScaleState loss_scale_from_json(const nlohmann::json& j, const std::string& where);

}  // namespace kiln::trainer
