// Bounds on a model's architecture sizes, checked from the config alone,
// before anything is built: a layer count of a billion (a typo, or a
// config.json's n_layer) used to build a name per parameter until the OOM
// killer, which on a shared node may pick another job, ended it.
#pragma once

#include <cstdint>

namespace kiln::trainer {

struct GptConfig;

// Host bytes kiln spends per layer before any weight exists (parameter
// names and specs, the layer's nodes in every step graph): a lower bound,
// so no model that would fit is refused.
inline constexpr double kHostBytesPerLayer = 64.0 * 1024;

// The model's parameter count as a double: arithmetic on the sizes, no
// names built, so it is cheap for any config (gpt_parameters' count).
double parameter_estimate(const GptConfig& c);

// Throws kiln::Error naming the flag to lower where the IR cannot address
// the model (a layer number at or above 2^30, the compile units' labels; a
// parameter tensor above 2^40 elements) or where building its description
// alone (kHostBytesPerLayer per layer) needs more than the host's
// available memory. Part of GptConfig::validate().
void check_model_size(const GptConfig& c);

// Throws kiln::Error naming the flags when `ranks_sharing` ranks' share of
// the fp32 weights alone exceeds the host's available memory: for
// commands that hold the weights (kiln train), not for precompile, which
// may build another machine's graphs.
void check_weights_fit(const GptConfig& c, int64_t ranks_sharing);

}  // namespace kiln::trainer
