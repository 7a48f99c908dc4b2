// RMSNORM and RMSNORM_GRAD over the last dim (Llama's norm: no mean, no
// bias). Rows are independent and split across threads; dgamma is a
// per-chunk partial sum combined in chunk order, so it does not depend on
// timing.
#include <cmath>
#include <cstring>

#include "kernels.h"

namespace kiln::cpu::KILN_CPU_ISA {

using namespace simd;

namespace {

// 1 / sqrt(mean(x^2) + eps).
inline float row_rstd(const float* x, int64_t c, float eps) {
  return 1.0f / std::sqrt(sum_sq_dev(x, c, 0.0f) / static_cast<float>(c) + eps);
}

}  // namespace

void rmsnorm(const Ctx& ctx, const float* x, const float* gamma, float* y, int64_t rows, int64_t cols, float eps) {
  for_chunks(ctx, rows, grain_for(3 * cols), [&](int64_t, int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* xr = x + r * cols;
      float* yr = y + r * cols;
      const V vr = set1(row_rstd(xr, cols, eps));
      int64_t j = 0;
      for (; j + W <= cols; j += W) store(yr + j, load(xr + j) * vr * load(gamma + j));
      if (j < cols) {
        const int64_t t = cols - j;
        store_partial(yr + j, load_partial(xr + j, t) * vr * load_partial(gamma + j, t), t);
      }
    }
  });
}

// With r = rstd, xhat = x r and g = dy gamma:
//   dx = r (g - xhat mean(g xhat)),  dgamma = sum over rows of dy xhat.
void rmsnorm_grad(const Ctx& ctx, const float* x, const float* gamma, const float* dy, float* dx, float* dgamma,
                  int64_t rows, int64_t cols, float eps) {
  float* partial = static_cast<float*>(ctx.scratch);  // [chunk][cols]
  const float inv_c = 1.0f / static_cast<float>(cols);
  const int64_t chunks = for_chunks(ctx, rows, grain_for(6 * cols), [&](int64_t chunk, int64_t r0, int64_t r1) {
    float* pg = partial + chunk * cols;
    std::memset(pg, 0, static_cast<size_t>(cols) * sizeof(float));
    for (int64_t r = r0; r < r1; ++r) {
      const float* xr = x + r * cols;
      const float* dyr = dy + r * cols;
      float* dxr = dx + r * cols;
      const V vr = set1(row_rstd(xr, cols, eps));
      // sum(g xhat); a partial block's padding is zero in dy, adding nothing.
      V sgx = zero();
      int64_t j = 0;
      for (; j + W <= cols; j += W) sgx = fma(load(dyr + j) * load(gamma + j), load(xr + j) * vr, sgx);
      if (j < cols) {
        const int64_t t = cols - j;
        sgx = fma(load_partial(dyr + j, t) * load_partial(gamma + j, t), load_partial(xr + j, t) * vr, sgx);
      }
      const V mgx = set1(hsum(sgx) * inv_c);
      // dx last: every input element of the row is read before dxr is
      // written, so dx may share memory with x or dy.
      for (j = 0; j + W <= cols; j += W) {
        const V dv = load(dyr + j), xh = load(xr + j) * vr;
        store(pg + j, fma(dv, xh, load(pg + j)));
        store(dxr + j, (dv * load(gamma + j) - xh * mgx) * vr);
      }
      if (j < cols) {
        const int64_t t = cols - j;
        const V dv = load_partial(dyr + j, t), xh = load_partial(xr + j, t) * vr;
        store_partial(pg + j, fma(dv, xh, load_partial(pg + j, t)), t);
        store_partial(dxr + j, (dv * load_partial(gamma + j, t) - xh * mgx) * vr, t);
      }
    }
  });
  // Combine in chunk order (never more chunks than rows: each one ran).
  for (int64_t j = 0; j < cols; ++j) {
    float g = 0.0f;
    for (int64_t c = 0; c < chunks; ++c) g += partial[c * cols + j];
    dgamma[j] = g;
  }
}

}  // namespace kiln::cpu::KILN_CPU_ISA
