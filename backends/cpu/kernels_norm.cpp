// LAYERNORM and LAYERNORM_GRAD over the last dim. Rows are independent and
// split across threads; dgamma/dbeta are per-chunk partial sums combined in
// chunk order, so they do not depend on timing.
#include <cmath>
#include <cstring>

#include "kernels.h"

namespace kiln::cpu::KILN_CPU_ISA {

using namespace simd;

namespace {

struct RowStats {
  float mean, rstd;
};

// Two passes (mean, then squared deviations) rather than E[x^2] - E[x]^2,
// which cancels badly when |mean| >> std.
inline RowStats row_stats(const float* x, int64_t c, float eps) {
  float mean = sum(x, c) / static_cast<float>(c);
  float var = sum_sq_dev(x, c, mean) / static_cast<float>(c);
  return {mean, 1.0f / std::sqrt(var + eps)};
}

}  // namespace

void layernorm(const Ctx& ctx, const float* x, const float* gamma, const float* beta, float* y, int64_t rows,
               int64_t cols, float eps) {
  for_chunks(ctx, rows, grain_for(4 * cols), [&](int64_t, int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* xr = x + r * cols;
      float* yr = y + r * cols;
      RowStats st = row_stats(xr, cols, eps);
      V vm = set1(st.mean), vr = set1(st.rstd);
      int64_t j = 0;
      for (; j + W <= cols; j += W) store(yr + j, fma((load(xr + j) - vm) * vr, load(gamma + j), load(beta + j)));
      if (j < cols) {
        int64_t t = cols - j;
        V o = fma((load_partial(xr + j, t) - vm) * vr, load_partial(gamma + j, t), load_partial(beta + j, t));
        store_partial(yr + j, o, t);
      }
    }
  });
}

// With xhat = (x - mean) rstd and g = dy gamma:
//   dx = rstd (g - mean(g) - xhat mean(g xhat))
//   dgamma = sum over rows of dy xhat, dbeta = sum over rows of dy.
void layernorm_grad(const Ctx& ctx, const float* x, const float* gamma, const float* dy, float* dx, float* dgamma,
                    float* dbeta, int64_t rows, int64_t cols, float eps) {
  float* partial = static_cast<float*>(ctx.scratch);  // [chunk][2][cols]
  const float inv_c = 1.0f / static_cast<float>(cols);
  int64_t chunks = for_chunks(ctx, rows, grain_for(8 * cols), [&](int64_t chunk, int64_t r0, int64_t r1) {
    float* pg = partial + chunk * 2 * cols;
    float* pb = pg + cols;
    std::memset(pg, 0, static_cast<size_t>(2 * cols) * sizeof(float));
    for (int64_t r = r0; r < r1; ++r) {
      const float* xr = x + r * cols;
      const float* dyr = dy + r * cols;
      float* dxr = dx + r * cols;
      RowStats st = row_stats(xr, cols, eps);
      V vm = set1(st.mean), vr = set1(st.rstd);
      // sum(g) and sum(g xhat); the padding of a partial block is zero in
      // dy, so it adds nothing. g is kept rounded (opaque) so that g - mean(g)
      // is exactly 0 where it should be (e.g. a single column).
      V sg = zero(), sgx = zero();
      int64_t j = 0;
      for (; j + W <= cols; j += W) {
        V xh = (load(xr + j) - vm) * vr;
        V g = opaque(load(dyr + j) * load(gamma + j));
        sg = sg + g;
        sgx = fma(g, xh, sgx);
      }
      if (j < cols) {
        int64_t t = cols - j;
        V xh = (load_partial(xr + j, t) - vm) * vr;
        V g = opaque(load_partial(dyr + j, t) * load_partial(gamma + j, t));
        sg = sg + g;
        sgx = fma(g, xh, sgx);
      }
      V mg = set1(hsum(sg) * inv_c), mgx = set1(hsum(sgx) * inv_c);
      // dx last: every input element of the row is read before dxr is
      // written, so dx may share memory with x or dy.
      auto tail = [&](int64_t jj, int64_t t) {
        V xv = load_partial(xr + jj, t), dv = load_partial(dyr + jj, t);
        V xh = (xv - vm) * vr;
        V g = opaque(dv * load_partial(gamma + jj, t));
        store_partial(pg + jj, fma(dv, xh, load_partial(pg + jj, t)), t);
        store_partial(pb + jj, load_partial(pb + jj, t) + dv, t);
        store_partial(dxr + jj, (g - mg - xh * mgx) * vr, t);
      };
      for (j = 0; j + W <= cols; j += W) {
        V xv = load(xr + j), dv = load(dyr + j);
        V xh = (xv - vm) * vr;
        V g = opaque(dv * load(gamma + j));
        store(pg + j, fma(dv, xh, load(pg + j)));
        store(pb + j, load(pb + j) + dv);
        store(dxr + j, (g - mg - xh * mgx) * vr);
      }
      if (j < cols) tail(j, cols - j);
    }
  });
  // Combine in chunk order (there are never more chunks than rows, so every
  // chunk ran and zeroed its partials).
  for (int64_t j = 0; j < cols; ++j) {
    float g = 0.0f, b = 0.0f;
    for (int64_t c = 0; c < chunks; ++c) {
      g += partial[c * 2 * cols + j];
      b += partial[c * 2 * cols + cols + j];
    }
    dgamma[j] = g;
    dbeta[j] = b;
  }
}

}  // namespace kiln::cpu::KILN_CPU_ISA
