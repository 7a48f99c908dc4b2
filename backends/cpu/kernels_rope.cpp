// ROPE and ROPE_GRAD: rotary position embedding over rows of x [..., T, D].
// The row at position t rotates its R feature pairs by the angles of cos and
// sin row t, computed by the host, so the kernel is a few multiplies per
// pair. Rows are independent and split across threads; y never aliases x
// (the op reads x[i + R] to write y[i]).
#include <cstring>

#include "kernels.h"

namespace kiln::cpu::KILN_CPU_ISA {

using namespace simd;

namespace {

// y = x rotated by the angles (cos, sin_sign * sin) of each row's position.
void rope_rotate(const Ctx& ctx, const float* x, const float* cos, const float* sin, float* y, int64_t rows,
                 int64_t cols, int64_t positions, int64_t pairs, bool interleaved, float sin_sign) {
  const V vsign = set1(sin_sign);
  for_chunks(ctx, rows, grain_for(2 * cols), [&](int64_t, int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* xr = x + r * cols;
      float* yr = y + r * cols;
      const float* cr = cos + (r % positions) * pairs;
      const float* sr = sin + (r % positions) * pairs;
      if (interleaved) {
        for (int64_t i = 0; i < pairs; ++i) {
          const float a = xr[2 * i], b = xr[2 * i + 1], c = cr[i], s = sin_sign * sr[i];
          yr[2 * i] = a * c - b * s;
          yr[2 * i + 1] = b * c + a * s;
        }
      } else {
        // The pairs (x[i], x[i + R]) are two contiguous halves: W pairs a step.
        const float* xa = xr;
        const float* xb = xr + pairs;
        float* ya = yr;
        float* yb = yr + pairs;
        int64_t i = 0;
        for (; i + W <= pairs; i += W) {
          const V a = load(xa + i), b = load(xb + i), c = load(cr + i), s = load(sr + i) * vsign;
          store(ya + i, a * c - b * s);
          store(yb + i, b * c + a * s);
        }
        if (i < pairs) {
          const int64_t t = pairs - i;
          const V a = load_partial(xa + i, t), b = load_partial(xb + i, t), c = load_partial(cr + i, t),
                  s = load_partial(sr + i, t) * vsign;
          store_partial(ya + i, a * c - b * s, t);
          store_partial(yb + i, b * c + a * s, t);
        }
      }
      // Features past the rotated 2R pass through (--rotary-percent < 1).
      if (2 * pairs < cols)
        std::memcpy(yr + 2 * pairs, xr + 2 * pairs, static_cast<size_t>(cols - 2 * pairs) * sizeof(float));
    }
  });
}

}  // namespace

void rope(const Ctx& ctx, const float* x, const float* cos, const float* sin, float* y, int64_t rows, int64_t cols,
          int64_t positions, int64_t pairs, bool interleaved) {
  rope_rotate(ctx, x, cos, sin, y, rows, cols, positions, pairs, interleaved, 1.0f);
}

// The transpose of a rotation is the rotation by the negated angle.
void rope_grad(const Ctx& ctx, const float* dy, const float* cos, const float* sin, float* dx, int64_t rows,
               int64_t cols, int64_t positions, int64_t pairs, bool interleaved) {
  rope_rotate(ctx, dy, cos, sin, dx, rows, cols, positions, pairs, interleaved, -1.0f);
}

}  // namespace kiln::cpu::KILN_CPU_ISA
