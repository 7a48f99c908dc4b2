// CAUSAL_SOFTMAX (and DOCUMENT_SOFTMAX), SOFTMAX_GRAD and DROPOUT on bf16/f16 storage: the
// attention scores and probabilities are the largest activations after the
// logits ([B, H, T, T]), so these read and write 16-bit values themselves.
// Each row is widened into the worker's f32 rows of scratch, computed on
// exactly as the f32 kernels do, and rounded once into the output.
#include <cstring>

#include "convert16.h"
#include "kernels.h"
#include "kiln/half.h"

namespace kiln::cpu::KILN_CPU_ISA {

using namespace simd;

void causal_softmax_16bit(const Ctx& ctx, kiln_dtype dtype, const uint16_t* x, uint16_t* y, int64_t batch, int64_t t,
                          float scale, VisibleKeys keys) {
  auto* buffers = static_cast<float*>(ctx.scratch);
  for_chunks(ctx, batch * t, grain_for(4 * t), [&](int64_t chunk, int64_t r0, int64_t r1) {
    float* xr = buffers + chunk * 2 * t;
    float* yr = xr + t;
    for (int64_t r = r0; r < r1; ++r) {
      // Columns [first, end) are unmasked; the rest are stored as 0.
      const int64_t first = keys.first(r, t), end = r % t + 1, len = end - first;
      widen_row(dtype, x + r * t + first, xr, len);
      if (first > 0) std::memset(yr, 0, static_cast<size_t>(first) * sizeof(float));
      float m = max_scaled(xr, len, scale);
      float s = exp_store_sum(xr, scale, m, yr + first, len);
      simd::scale(yr + first, 1.0f / s, yr + first, len);
      if (end < t) std::memset(yr + end, 0, static_cast<size_t>(t - end) * sizeof(float));
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

}  // namespace kiln::cpu::KILN_CPU_ISA
