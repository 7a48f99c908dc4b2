// CAUSAL_SOFTMAX and SOFTMAX_GRAD, row by row over [..., T, T].
#include <cstring>

#include "kernels.h"

namespace kiln::cpu::KILN_CPU_ISA {

using namespace simd;

void causal_softmax(const Ctx& ctx, const float* x, float* y, int64_t batch, int64_t t, float scale) {
  // Row i touches i + 1 elements; on average about t/2 exps per row.
  const int64_t rows = batch * t;
  for_chunks(ctx, rows, grain_for(4 * t), [&](int64_t, int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t len = r % t + 1;  // columns j <= i are unmasked
      const float* xr = x + r * t;
      float* yr = y + r * t;
      float m = max_scaled(xr, len, scale);
      float s = exp_store_sum(xr, scale, m, yr, len);
      simd::scale(yr, 1.0f / s, yr, len);
      if (len < t) std::memset(yr + len, 0, static_cast<size_t>(t - len) * sizeof(float));
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
