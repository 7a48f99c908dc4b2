// CAST: each element widened to f32 from x's dtype and narrowed to y's with
// kiln/half.h's conversions, the bits the reference interpreter defines (to
// nearest even, overflow to inf, NaN kept). Not elementwise in place: a
// wider y would overwrite x elements not yet read, and the op table does
// not let y share x's memory.
#include "kernels.h"
#include "kiln/half.h"

namespace kiln::cpu::KILN_CPU_ISA {

namespace {

float load_as_f32(const void* x, kiln_dtype dtype, int64_t i) {
  switch (dtype) {
    case KILN_BF16: return kiln_bf16_to_f32(static_cast<const uint16_t*>(x)[i]);
    case KILN_F16: return kiln_f16_to_f32(static_cast<const uint16_t*>(x)[i]);
    default: return static_cast<const float*>(x)[i];
  }
}

void store_from_f32(void* y, kiln_dtype dtype, int64_t i, float v) {
  switch (dtype) {
    case KILN_BF16: static_cast<uint16_t*>(y)[i] = kiln_f32_to_bf16(v); return;
    case KILN_F16: static_cast<uint16_t*>(y)[i] = kiln_f32_to_f16(v); return;
    default: static_cast<float*>(y)[i] = v; return;
  }
}

}  // namespace

void cast(const Ctx& ctx, const void* x, kiln_dtype x_dtype, void* y, kiln_dtype y_dtype, int64_t n) {
  for_chunks(ctx, n, grain_for(4), [&](int64_t, int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) store_from_f32(y, y_dtype, i, load_as_f32(x, x_dtype, i));
  });
}

}  // namespace kiln::cpu::KILN_CPU_ISA
