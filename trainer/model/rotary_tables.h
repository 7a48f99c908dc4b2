// The cos/sin tables of rotary position embeddings (--position-embedding-type
// rope), computed on the host in double as Megatron-core's RotaryEmbedding
// does, and fed to the graph as inputs: angle[t, i] = t * inv_freq[i] for
// the R = rotary dims / 2 frequencies inv_freq[i] = base^(-2i / rotary dims),
// optionally rescaled as Llama-3.1 does (--use-rope-scaling).
#pragma once

#include <cstdint>
#include <vector>

#include "trainer/model/gpt.h"

namespace kiln::trainer {

// The R inverse frequencies of cfg (rotary dims: --rotary-percent of the
// head dim), after Llama-3.1's scaling when cfg.use_rope_scaling.
std::vector<double> rotary_inverse_frequencies(const GptConfig& cfg);

// Llama-3.1's frequency scaling (HF transformers' _compute_llama3_parameters,
// Megatron-core's apply_rope_scaling): wavelengths longer than the original
// context / low_freq_factor are divided by `factor`, those shorter than
// original context / high_freq_factor are kept, and the band between is
// interpolated.
std::vector<double> llama3_scaled_frequencies(const std::vector<double>& inv_freq, double factor,
                                              double low_freq_factor = 1.0, double high_freq_factor = 4.0,
                                              double original_max_positions = 8192.0);

// cos and sin of angle[t, i] for positions t in [0, cfg.seq_length), row-major [T, R].
struct RotaryTables {
  int64_t positions = 0, pairs = 0;
  std::vector<double> cos, sin;
};
RotaryTables rotary_tables(const GptConfig& cfg);

}  // namespace kiln::trainer
