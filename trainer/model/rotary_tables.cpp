#include "trainer/model/rotary_tables.h"

#include <cmath>
#include <numbers>

namespace kiln::trainer {

std::vector<double> llama3_scaled_frequencies(const std::vector<double>& inv_freq, double factor,
                                              double low_freq_factor, double high_freq_factor,
                                              double original_max_positions) {
  const double low_freq_wavelen = original_max_positions / low_freq_factor;
  const double high_freq_wavelen = original_max_positions / high_freq_factor;
  std::vector<double> out;
  out.reserve(inv_freq.size());
  for (double f : inv_freq) {
    const double wavelen = 2.0 * std::numbers::pi / f;
    if (wavelen < high_freq_wavelen) {
      out.push_back(f);  // high frequencies: unchanged
    } else if (wavelen > low_freq_wavelen) {
      out.push_back(f / factor);  // low frequencies: stretched to the longer context
    } else {
      const double smooth = (original_max_positions / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor);
      out.push_back((1.0 - smooth) * f / factor + smooth * f);
    }
  }
  return out;
}

std::vector<double> rotary_inverse_frequencies(const GptConfig& cfg) {
  const int64_t pairs = cfg.rotary_pairs();
  const double dims = static_cast<double>(2 * pairs);
  std::vector<double> inv_freq(static_cast<size_t>(pairs));
  for (int64_t i = 0; i < pairs; ++i)
    inv_freq[static_cast<size_t>(i)] =
        1.0 / std::pow(static_cast<double>(cfg.rotary_base), static_cast<double>(2 * i) / dims);
  if (cfg.use_rope_scaling) return llama3_scaled_frequencies(inv_freq, cfg.rope_scaling_factor);
  return inv_freq;
}

RotaryTables rotary_tables(const GptConfig& cfg) {
  const std::vector<double> inv_freq = rotary_inverse_frequencies(cfg);
  RotaryTables t;
  t.positions = cfg.seq_length;
  t.pairs = static_cast<int64_t>(inv_freq.size());
  t.cos.resize(static_cast<size_t>(t.positions * t.pairs));
  t.sin.resize(t.cos.size());
  for (int64_t p = 0; p < t.positions; ++p)
    for (int64_t i = 0; i < t.pairs; ++i) {
      const double angle = static_cast<double>(p) * inv_freq[static_cast<size_t>(i)];
      t.cos[static_cast<size_t>(p * t.pairs + i)] = std::cos(angle);
      t.sin[static_cast<size_t>(p * t.pairs + i)] = std::sin(angle);
    }
  return t;
}

}  // namespace kiln::trainer
