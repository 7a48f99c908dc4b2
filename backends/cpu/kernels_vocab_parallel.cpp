// The vocab-parallel cross-entropy's pieces (kiln/ir.h): ROW_MAX, the
// per-shard sums (CROSS_ENTROPY_SHARD and its gradient) and the loss from
// the group-summed sums (CROSS_ENTROPY_FROM_SUMS and its gradient). Together
// on one shard they compute what cross_entropy.cpp does, with the row max
// and the exp-sum split out so a host collective can combine shards between
// them.
//
// Targets outside [0, cols) are not errors here: they name a token another
// shard holds, and contribute nothing to this shard's target term.
#include <cmath>

#include "kernels.h"

namespace kiln::cpu::KILN_CPU_ISA {

using namespace simd;

namespace {

// max over x[0, n) (n >= 1), NaN if any element is NaN. The SIMD max lets a
// NaN through only until the next finite element replaces it, so NaNs are
// tracked on the side: v - v is 0 for a finite v and NaN for a NaN or an
// infinity, and only if that sum is NaN is the row scanned for a real NaN.
float vp_row_max(const float* x, int64_t n) {
  V a0 = set1(-INFINITY), a1 = a0, poison = zero();
  int64_t i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    V v0 = load(x + i), v1 = load(x + i + W);
    a0 = max(a0, v0);
    a1 = max(a1, v1);
    poison = poison + (v0 - v0) + (v1 - v1);
  }
  if (i + W <= n) {
    V v = load(x + i);
    a0 = max(a0, v);
    poison = poison + (v - v);
    i += W;
  }
  if (i < n) {
    V v = load_partial(x + i, n - i, x[i]);  // padded with a real element
    a1 = max(a1, v);
    poison = poison + (v - v);
  }
  const float m = hmax(max(a0, a1));
  if (!std::isnan(hsum(poison))) return m;
  for (int64_t j = 0; j < n; ++j)
    if (std::isnan(x[j])) return x[j];
  return m;  // only infinities: the max above is right
}

bool vp_holds(int32_t target, int64_t cols) { return target >= 0 && target < cols; }

}  // namespace

void row_max(const Ctx& ctx, const float* x, float* y, int64_t rows, int64_t cols) {
  for_chunks(ctx, rows, grain_for(cols), [&](int64_t, int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) y[r] = vp_row_max(x + r * cols, cols);
  });
}

void cross_entropy_shard(const Ctx& ctx, const float* logits, const int32_t* targets, const float* rowmax, float* sums,
                         int64_t rows, int64_t cols) {
  for_chunks(ctx, rows, grain_for(4 * cols), [&](int64_t, int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* xr = logits + r * cols;
      const float m = rowmax[r];
      sums[2 * r] = exp_sum(xr, m, cols);
      sums[2 * r + 1] = vp_holds(targets[r], cols) ? xr[targets[r]] - m : 0.0f;
    }
  });
}

void cross_entropy_shard_grad(const Ctx& ctx, const float* logits, const int32_t* targets, const float* rowmax,
                              const float* dsums, float* dlogits, int64_t rows, int64_t cols) {
  for_chunks(ctx, rows, grain_for(4 * cols), [&](int64_t, int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* xr = logits + r * cols;
      float* dr = dlogits + r * cols;
      const V m = set1(rowmax[r]), d0 = set1(dsums[2 * r]);
      map1(xr, dr, cols, [m, d0](V v) { return d0 * simd::exp(v - m); });
      if (vp_holds(targets[r], cols)) dr[targets[r]] += dsums[2 * r + 1];
    }
  });
}

void cross_entropy_from_sums(const Ctx& ctx, const float* sums, float* loss, int64_t rows) {
  // Per-row terms land in scratch and are summed serially in row order, so
  // the result does not depend on how rows were split (as cross_entropy).
  double* row_loss = static_cast<double*>(ctx.scratch);
  for_chunks(ctx, rows, grain_for(32), [&](int64_t, int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      row_loss[r] = std::log(static_cast<double>(sums[2 * r])) - static_cast<double>(sums[2 * r + 1]);
  });
  double total = 0.0;
  for (int64_t r = 0; r < rows; ++r) total += row_loss[r];
  loss[0] = static_cast<float>(total / static_cast<double>(rows));
}

void cross_entropy_from_sums_grad(const Ctx& ctx, const float* sums, const float* dloss, float* dsums, int64_t rows) {
  const double k = static_cast<double>(dloss[0]) / static_cast<double>(rows);
  for_chunks(ctx, rows, grain_for(8), [&](int64_t, int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      dsums[2 * r] = static_cast<float>(k / static_cast<double>(sums[2 * r]));
      dsums[2 * r + 1] = static_cast<float>(-k);
    }
  });
}

}  // namespace kiln::cpu::KILN_CPU_ISA
