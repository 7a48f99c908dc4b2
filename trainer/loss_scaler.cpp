#include "trainer/loss_scaler.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace kiln::trainer {

bool dynamic_loss_scale(const MixedPrecision& p) { return p.scales_loss() && !(p.loss_scale > 0); }

LossScaleState initial_loss_scale(const MixedPrecision& p) {
  LossScaleState s;
  if (!p.scales_loss()) return s;
  s.scale = p.loss_scale > 0 ? p.loss_scale : p.initial_loss_scale;
  s.hysteresis_tracker = p.hysteresis;
  return s;
}

void update_loss_scale(LossScaleState& s, const MixedPrecision& p, bool found_inf) {
  if (!dynamic_loss_scale(p)) return;
  // Megatron keeps the scale in an fp32 tensor: halving and doubling it
  // there is exact, as it is in a double (the scale stays a power of two
  // times the initial one).
  if (found_inf) {
    s.growth_tracker = 0;
    if (--s.hysteresis_tracker <= 0) s.scale = std::max(s.scale * 0.5, p.min_loss_scale);
    return;
  }
  if (++s.growth_tracker == p.loss_scale_window) {
    s.growth_tracker = 0;
    s.hysteresis_tracker = p.hysteresis;
    s.scale *= 2.0;
  }
}

bool loss_scale_can_drop(const LossScaleState& s, const MixedPrecision& p) {
  return dynamic_loss_scale(p) && s.scale > p.min_loss_scale;
}

nlohmann::json loss_scale_json(const LossScaleState& s) {
  return {{"scale", s.scale}, {"growth_tracker", s.growth_tracker}, {"hysteresis_tracker", s.hysteresis_tracker}};
}

LossScaleState loss_scale_from_json(const nlohmann::json& j, const std::string& where) {
  const std::string fix = "; the checkpoint is corrupt, re-save it or resume with --no-load-optim";
  if (!j.is_object() || !j.contains("scale") || !j["scale"].is_number() || !j.contains("growth_tracker") ||
      !j["growth_tracker"].is_number_integer() || !j.contains("hysteresis_tracker") ||
      !j["hysteresis_tracker"].is_number_integer())
    throw Error(where + " is not {scale, growth_tracker, hysteresis_tracker}" + fix);
  LossScaleState s{j["scale"].get<double>(), j["growth_tracker"].get<int64_t>(),
                   j["hysteresis_tracker"].get<int64_t>()};
  // A scale that is no finite positive f32 could not have been reached.
  if (!(s.scale > 0) || !std::isfinite(static_cast<float>(s.scale)) || s.growth_tracker < 0)
    throw Error(where + " holds scale " + std::to_string(s.scale) + " and growth tracker " +
                std::to_string(s.growth_tracker) + fix);
  return s;
}

}  // namespace kiln::trainer
