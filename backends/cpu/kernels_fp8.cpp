// CAST_FP8 (kiln/ops.h): the tensor's amax, then each element cast with
// kiln/fp8.h's functions, whose integer arithmetic gives the reference
// interpreter's bits. Two passes over x: the amax of every chunk (a max,
// so the order of chunks cannot change it), then the cast; a bf16/f16 x
// is widened and y narrowed a block at a time on the stack.
#include <algorithm>

#include "convert16.h"
#include "kernels.h"
#include "kiln/fp8.h"

namespace kiln::cpu::KILN_CPU_ISA {

namespace {

constexpr int64_t kFp8Block = 1024;

// Calls fn(block, i, len) over x[b, e) as f32, kFp8Block elements at a time.
template <class F>
void fp8_f32_blocks(const void* x, kiln_dtype dtype, int64_t b, int64_t e, F&& fn) {
  alignas(64) float block[kFp8Block];
  for (int64_t i = b; i < e; i += kFp8Block) {
    const int64_t len = std::min(kFp8Block, e - i);
    const float* v = static_cast<const float*>(x) + i;
    if (dtype != KILN_F32) {
      widen_row(dtype, static_cast<const uint16_t*>(x) + i, block, len);
      v = block;
    }
    fn(v, i, len);
  }
}

}  // namespace

void cast_fp8(const Ctx& ctx, const void* x, kiln_dtype dtype, const float* scale, void* y, float* amax_out, int64_t n,
              int64_t format, bool current) {
  const auto f = format == 0 ? KILN_FP8_E4M3 : KILN_FP8_E5M2;
  auto* partial = static_cast<float*>(ctx.scratch);
  const int64_t chunks = for_chunks(ctx, n, 32768, [&](int64_t c, int64_t b, int64_t e) {
    float m = 0.0f;
    fp8_f32_blocks(x, dtype, b, e, [&](const float* v, int64_t, int64_t len) {
      for (int64_t k = 0; k < len; ++k) m = kiln_fp8_amax(m, v[k]);
    });
    partial[c] = m;
  });
  float amax = 0.0f;
  for (int64_t c = 0; c < chunks; ++c) amax = kiln_fp8_amax(amax, partial[c]);
  const float s = current ? kiln_fp8_current_scale(amax, f) : scale[0];
  const float s_inv = kiln_fp8_div(1.0f, s);
  for_chunks(ctx, n, grain_for(8), [&](int64_t, int64_t b, int64_t e) {
    fp8_f32_blocks(x, dtype, b, e, [&](const float* v, int64_t i, int64_t len) {
      alignas(64) float out[kFp8Block];
      float* dst = dtype == KILN_F32 ? static_cast<float*>(y) + i : out;
      for (int64_t k = 0; k < len; ++k) dst[k] = kiln_fp8_scaled_round(v[k], s, s_inv, f);
      if (dtype != KILN_F32) narrow_row(dtype, out, static_cast<uint16_t*>(y) + i, len);
    });
  });
  amax_out[0] = amax;
}

}  // namespace kiln::cpu::KILN_CPU_ISA
