// DROPOUT: y = x * (kept ? scale : 0) with the mask of kiln/philox.h. Each
// chunk walks its elements' global indices incrementally and draws one
// Philox block per 4 consecutive indices, so the work split cannot change
// a bit of the result. The 16-bit form masks in f32 and rounds back.
#include "kernels.h"
#include "kiln/half.h"
#include "kiln/philox.h"

namespace kiln::cpu::KILN_CPU_ISA {

namespace {

// Calls apply(e, m) for every element e in [0, n), m being the scale where
// the mask keeps e and 0 where it drops it.
template <class Apply>
void dropout_walk(const Ctx& ctx, const int32_t* key_words, int64_t n, int64_t site, int64_t period, int64_t stride,
                  float p, Apply apply) {
  // Read before any element is written (y may alias x), and the scale in
  // double once, as every backend does.
  const kiln_dropout_key key = kiln_dropout_key_from(key_words);
  const uint32_t threshold = kiln_dropout_threshold(p);
  const float scale = kiln_dropout_scale(p);
  const auto per = static_cast<uint64_t>(period), str = static_cast<uint64_t>(stride);
  const auto site_word = static_cast<uint32_t>(site);
  for_chunks(ctx, n, grain_for(16), [&](int64_t, int64_t e0, int64_t e1) {
    uint64_t row = static_cast<uint64_t>(e0) / per, col = static_cast<uint64_t>(e0) % per;
    uint64_t block = UINT64_MAX;  // no block yet: g >> 2 is below 2^62
    uint32_t words[4] = {};
    for (int64_t e = e0; e < e1; ++e) {
      const uint64_t g = row * str + col + key.offset;
      if (g >> 2 != block) {
        block = g >> 2;
        const uint32_t ctr[4] = {static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32), key.step, 0u};
        const uint32_t k[2] = {key.seed, site_word};
        kiln_philox4x32_10(ctr, k, words);
      }
      apply(e, kiln_dropout_keep(words[g & 3u], threshold) != 0 ? scale : 0.0f);
      if (++col == per) col = 0, ++row;
    }
  });
}

}  // namespace

void dropout(const Ctx& ctx, const float* x, const int32_t* key_words, float* y, int64_t n, int64_t site,
             int64_t period, int64_t stride, float p) {
  dropout_walk(ctx, key_words, n, site, period, stride, p, [&](int64_t e, float m) { y[e] = x[e] * m; });
}

// Each element widened, masked in f32 and rounded back; y may alias x.
void dropout_16bit(const Ctx& ctx, kiln_dtype dtype, const uint16_t* x, const int32_t* key_words, uint16_t* y,
                   int64_t n, int64_t site, int64_t period, int64_t stride, float p) {
  const bool bf16 = dtype == KILN_BF16;
  dropout_walk(ctx, key_words, n, site, period, stride, p, [&](int64_t e, float m) {
    const float v = (bf16 ? kiln_bf16_to_f32(x[e]) : kiln_f16_to_f32(x[e])) * m;
    y[e] = bf16 ? kiln_f32_to_bf16(v) : kiln_f32_to_f16(v);
  });
}

}  // namespace kiln::cpu::KILN_CPU_ISA
