// CAUSAL_SOFTMAX, SOFTMAX_GRAD and DROPOUT on bf16/f16 storage: the
// attention scores and probabilities are the largest activations after the
// logits ([B, H, T, T]), so these read and write 16-bit values themselves.
// Each row is widened into the worker's f32 rows of scratch, computed on
// exactly as the f32 kernels do, and rounded once into the output.
#include <cstring>

#include "convert16.h"
#include "kernels.h"
#include "kiln/half.h"
#include "kiln/philox.h"

namespace kiln::cpu::KILN_CPU_ISA {

using namespace simd;

void causal_softmax_16bit(const Ctx& ctx, kiln_dtype dtype, const uint16_t* x, uint16_t* y, int64_t batch, int64_t t,
                          float scale) {
  auto* buffers = static_cast<float*>(ctx.scratch);
  for_chunks(ctx, batch * t, grain_for(4 * t), [&](int64_t chunk, int64_t r0, int64_t r1) {
    float* xr = buffers + chunk * 2 * t;
    float* yr = xr + t;
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t len = r % t + 1;  // columns j <= i are unmasked; the rest are stored as 0
      widen_row(dtype, x + r * t, xr, len);
      float m = max_scaled(xr, len, scale);
      float s = exp_store_sum(xr, scale, m, yr, len);
      simd::scale(yr, 1.0f / s, yr, len);
      if (len < t) std::memset(yr + len, 0, static_cast<size_t>(t - len) * sizeof(float));
      narrow_row(dtype, yr, y + r * t, t);
    }
  });
}

void softmax_grad_16bit(const Ctx& ctx, kiln_dtype dtype, const uint16_t* y, const uint16_t* dy, uint16_t* dx,
                        int64_t rows, int64_t cols, float scale) {
  auto* buffers = static_cast<float*>(ctx.scratch);
  for_chunks(ctx, rows, grain_for(3 * cols), [&](int64_t chunk, int64_t r0, int64_t r1) {
    float* yr = buffers + chunk * 3 * cols;
    float* dyr = yr + cols;
    float* dxr = dyr + cols;
    for (int64_t r = r0; r < r1; ++r) {
      widen_row(dtype, y + r * cols, yr, cols);
      widen_row(dtype, dy + r * cols, dyr, cols);
      V d = set1(dot(dyr, yr, cols)), vs = set1(scale);
      map2(yr, dyr, dxr, cols, [&](V yv, V dv) { return vs * yv * (dv - d); });
      narrow_row(dtype, dxr, dx + r * cols, cols);
    }
  });
}

// The f32 kernel's mask walk (kernels_dropout.cpp), one element at a time:
// y may alias x, and each element is read before it is written.
void dropout_16bit(const Ctx& ctx, kiln_dtype dtype, const uint16_t* x, const int32_t* key_words, uint16_t* y,
                   int64_t n, int64_t site, int64_t period, int64_t stride, float p) {
  const kiln_dropout_key key = kiln_dropout_key_from(key_words);
  const uint32_t threshold = kiln_dropout_threshold(p);
  const float scale = kiln_dropout_scale(p);
  const auto per = static_cast<uint64_t>(period), str = static_cast<uint64_t>(stride);
  const auto site_word = static_cast<uint32_t>(site);
  const bool bf16 = dtype == KILN_BF16;
  for_chunks(ctx, n, grain_for(16), [&](int64_t, int64_t e0, int64_t e1) {
    uint64_t row = static_cast<uint64_t>(e0) / per, col = static_cast<uint64_t>(e0) % per;
    uint64_t block = UINT64_MAX;
    uint32_t words[4] = {};
    for (int64_t e = e0; e < e1; ++e) {
      const uint64_t g = row * str + col + key.offset;
      if (g >> 2 != block) {
        block = g >> 2;
        const uint32_t ctr[4] = {static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32), key.step, 0u};
        const uint32_t k[2] = {key.seed, site_word};
        kiln_philox4x32_10(ctr, k, words);
      }
      const bool keep = kiln_dropout_keep(words[g & 3u], threshold) != 0;
      const float v = (bf16 ? kiln_bf16_to_f32(x[e]) : kiln_f16_to_f32(x[e])) * (keep ? scale : 0.0f);
      y[e] = bf16 ? kiln_f32_to_bf16(v) : kiln_f32_to_f16(v);
      if (++col == per) col = 0, ++row;
    }
  });
}

}  // namespace kiln::cpu::KILN_CPU_ISA
