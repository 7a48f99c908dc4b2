// CAUSAL_SOFTMAX, DOCUMENT_SOFTMAX and SOFTMAX_GRAD, row by row over [..., T, T].
#include <cstring>

#include "kernels.h"

namespace kiln::cpu::KILN_CPU_ISA {

using namespace simd;

void causal_softmax(const Ctx& ctx, const float* x, float* y, int64_t batch, int64_t t, float scale, VisibleKeys keys) {
  // Row i touches i + 1 elements; on average about t/2 exps per row.
  const int64_t rows = batch * t;
  for_chunks(ctx, rows, grain_for(4 * t), [&](int64_t, int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t first = keys.first(r, t), end = r % t + 1;  // columns [first, end) are unmasked
      const int64_t len = end - first;
      const float* xr = x + r * t + first;
      float* yr = y + r * t;
      if (first > 0) std::memset(yr, 0, static_cast<size_t>(first) * sizeof(float));
      float m = max_scaled(xr, len, scale);
      float s = exp_store_sum(xr, scale, m, yr + first, len);
      simd::scale(yr + first, 1.0f / s, yr + first, len);
      if (end < t) std::memset(yr + end, 0, static_cast<size_t>(t - end) * sizeof(float));
    }
  });
}

// dx = scale * y * (dy - sum_j dy*y)
void softmax_grad(const Ctx& ctx, const float* y, const float* dy, float* dx, int64_t rows, int64_t cols, float scale) {
  for_chunks(ctx, rows, grain_for(3 * cols), [&](int64_t, int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* yr = y + r * cols;
      const float* dyr = dy + r * cols;
      V d = set1(dot(dyr, yr, cols)), vs = set1(scale);
      map2(yr, dyr, dx + r * cols, cols, [&](V yv, V dv) { return vs * yv * (dv - d); });
    }
  });
}

}  // namespace kiln::cpu::KILN_CPU_ISA
