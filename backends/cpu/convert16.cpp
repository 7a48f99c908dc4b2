#include "convert16.h"

#include <cpuid.h>
#include <immintrin.h>

#include "isa.h"
#include "kiln/half.h"

namespace kiln::cpu {

namespace avx512 {  // convert16_avx512.cpp
void widen_bf16_avx512(const uint16_t* src, float* dst, int64_t n);
void narrow_bf16_avx512(const float* src, uint16_t* dst, int64_t n);
}  // namespace avx512

namespace {

// F16C converts 8 values per instruction; narrowing rounds to nearest even
// and quiets NaN, like kiln/half.h. Widening would quiet a signaling NaN,
// where kiln/half.h's widening is exact, so a group of 8 holding any NaN
// takes the portable path. Compiled for F16C only here, called only after
// the runtime check.
__attribute__((target("avx,f16c"))) void widen_f16_f16c(const uint16_t* src, float* dst, int64_t n) {
  const __m128i magnitude = _mm_set1_epi16(0x7FFF), inf = _mm_set1_epi16(0x7C00);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    if (_mm_movemask_epi8(_mm_cmpgt_epi16(_mm_and_si128(h, magnitude), inf)) != 0) {
      for (int64_t k = i; k < i + 8; ++k) dst[k] = kiln_f16_to_f32(src[k]);
      continue;
    }
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
  }
  for (; i < n; ++i) dst[i] = kiln_f16_to_f32(src[i]);
}

__attribute__((target("avx,f16c"))) void narrow_f16_f16c(const float* src, uint16_t* dst, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  for (; i < n; ++i) dst[i] = kiln_f32_to_f16(src[i]);
}

bool cpu_has_avx512bw() {
  // isa.h's detection: CPUID and the OS's saving of the ZMM state.
  static const bool has = static_cast<int>(detected_isa()) >= static_cast<int>(CpuIsa::kAvx512);
  return has;
}

bool cpu_has_f16c() {
  static const bool has = [] {
    __builtin_cpu_init();
    // AVX (which includes the OS saving the YMM registers) from the builtin;
    // F16C from CPUID leaf 1 (ECX bit 29), which not every compiler's
    // __builtin_cpu_supports names.
    unsigned a = 0, b = 0, c = 0, d = 0;
    return __builtin_cpu_supports("avx") && __get_cpuid(1, &a, &b, &c, &d) != 0 && (c & bit_F16C) != 0;
  }();
  return has;
}

}  // namespace

bool f16c_in_use() { return cpu_has_f16c(); }

void widen_row(kiln_dtype dtype, const uint16_t* src, float* dst, int64_t n) {
  if (dtype == KILN_BF16 && cpu_has_avx512bw()) {
    avx512::widen_bf16_avx512(src, dst, n);
  } else if (dtype == KILN_BF16) {
    for (int64_t i = 0; i < n; ++i) dst[i] = kiln_bf16_to_f32(src[i]);  // a shift; vectorizes
  } else if (cpu_has_f16c()) {
    widen_f16_f16c(src, dst, n);
  } else {
    for (int64_t i = 0; i < n; ++i) dst[i] = kiln_f16_to_f32(src[i]);
  }
}

void narrow_row(kiln_dtype dtype, const float* src, uint16_t* dst, int64_t n) {
  if (dtype == KILN_BF16 && cpu_has_avx512bw()) {
    avx512::narrow_bf16_avx512(src, dst, n);
  } else if (dtype == KILN_BF16) {
    for (int64_t i = 0; i < n; ++i) dst[i] = kiln_f32_to_bf16(src[i]);
  } else if (cpu_has_f16c()) {
    narrow_f16_f16c(src, dst, n);
  } else {
    for (int64_t i = 0; i < n; ++i) dst[i] = kiln_f32_to_f16(src[i]);
  }
}

}  // namespace kiln::cpu
