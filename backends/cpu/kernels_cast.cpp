// CAST: each element widened to f32 from x's dtype and narrowed to y's with
// convert16.h's rows, which give kiln/half.h's bits, the ones the reference
// interpreter defines (to nearest even, overflow to inf, NaN kept), with
// F16C and AVX-512 where the CPU has them. Not elementwise in place: a
// wider y would overwrite x elements not yet read, and the op table does
// not let y share x's memory.
#include <cstring>

#include "convert16.h"
#include "kernels.h"

namespace kiln::cpu::KILN_CPU_ISA {

void cast(const Ctx& ctx, const void* x, kiln_dtype x_dtype, void* y, kiln_dtype y_dtype, int64_t n) {
  const bool x16 = x_dtype != KILN_F32, y16 = y_dtype != KILN_F32;
  for_chunks(ctx, n, grain_for(4), [&](int64_t, int64_t i0, int64_t i1) {
    const auto* x32 = static_cast<const float*>(x);
    const auto* xh = static_cast<const uint16_t*>(x);
    auto* y32 = static_cast<float*>(y);
    auto* yh = static_cast<uint16_t*>(y);
    if (!x16 && !y16) {
      std::memcpy(y32 + i0, x32 + i0, static_cast<size_t>(i1 - i0) * sizeof(float));
    } else if (!y16) {
      widen_row(x_dtype, xh + i0, y32 + i0, i1 - i0);
    } else if (!x16) {
      narrow_row(y_dtype, x32 + i0, yh + i0, i1 - i0);
    } else {
      // 16-bit to 16-bit: through f32 a block at a time, on the stack.
      constexpr int64_t kBlock = 256;
      float t[kBlock];
      for (int64_t i = i0; i < i1; i += kBlock) {
        const int64_t m = i1 - i < kBlock ? i1 - i : kBlock;
        widen_row(x_dtype, xh + i, t, m);
        narrow_row(y_dtype, t, yh + i, m);
      }
    }
  });
}

}  // namespace kiln::cpu::KILN_CPU_ISA
