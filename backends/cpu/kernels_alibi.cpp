// ALIBI: y[..., h, i, j] = x[..., h, i, j] + slopes[h] * (j - i), row by row
// over [..., H, T, T] (row r is query i = r % T of head h = (r / T) % H).
// The bias is rounded to f32 before the add, as on every backend, so the
// product is kept out of a fused multiply-add.
#include "kernels.h"

namespace kiln::cpu::KILN_CPU_ISA {

using namespace simd;

namespace {

// Lane offsets 0 .. W-1 as floats (W is at most 16).
alignas(64) constexpr float kAlibiLane[16] = {0.0f, 1.0f, 2.0f,  3.0f,  4.0f,  5.0f,  6.0f,  7.0f,
                                              8.0f, 9.0f, 10.0f, 11.0f, 12.0f, 13.0f, 14.0f, 15.0f};
static_assert(W <= 16);

}  // namespace

void alibi(const Ctx& ctx, const float* x, const float* slopes, float* y, int64_t rows, int64_t t, int64_t heads) {
  const V lane = load(kAlibiLane);
  for_chunks(ctx, rows, grain_for(t), [&](int64_t, int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t i = r % t;
      const V slope = set1(slopes[(r / t) % heads]);
      const float* xr = x + r * t;
      float* yr = y + r * t;
      // j - i is an integer below 2^24 in magnitude: exact as a float, and
      // so is adding a lane offset to it.
      int64_t j = 0;
      for (; j + W <= t; j += W) {
        const V bias = opaque(slope * (set1(static_cast<float>(j - i)) + lane));
        store(yr + j, load(xr + j) + bias);
      }
      if (j < t) {
        const int64_t n = t - j;
        const V bias = opaque(slope * (set1(static_cast<float>(j - i)) + lane));
        store_partial(yr + j, load_partial(xr + j, n) + bias, n);
      }
    }
  });
}

}  // namespace kiln::cpu::KILN_CPU_ISA
