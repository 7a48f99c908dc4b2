// bf16 rows on AVX-512 for convert16.cpp, which calls them only when the CPU
// has the avx512 path (isa.h). Compiled with the AVX-512 flags of every
// *_avx512.cpp file (CMakeLists.txt).
#include <immintrin.h>

#include <cstdint>

namespace kiln::cpu::avx512 {

// 16 values per step, masked at the tail. Narrowing is kiln/half.h's integer
// rounding, not vcvtneps2bf16, which flushes f32 denormals to zero (bf16
// keeps them: it has f32's exponent range) and exists only with
// AVX512-BF16; the conversion is memory-bound either way.
void widen_bf16_avx512(const uint16_t* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const int64_t left = n - i;
    const __mmask16 m = left >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << left) - 1u);
    const __m256i h = _mm256_maskz_loadu_epi16(m, src + i);
    _mm512_mask_storeu_ps(dst + i, m, _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)));
  }
}

void narrow_bf16_avx512(const float* src, uint16_t* dst, int64_t n) {
  const __m512i magnitude = _mm512_set1_epi32(0x7FFFFFFF), inf = _mm512_set1_epi32(0x7F800000),
                round = _mm512_set1_epi32(0x7FFF), one = _mm512_set1_epi32(1), quiet = _mm512_set1_epi32(0x40);
  for (int64_t i = 0; i < n; i += 16) {
    const int64_t left = n - i;
    const __mmask16 m = left >= 16 ? static_cast<__mmask16>(0xFFFF) : static_cast<__mmask16>((1u << left) - 1u);
    const __m512i u = _mm512_castps_si512(_mm512_maskz_loadu_ps(m, src + i));
    const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, magnitude), inf);
    const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(u, 16), one);
    const __m512i rounded = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(round, odd)), 16);
    const __m512i quieted = _mm512_or_si512(_mm512_srli_epi32(u, 16), quiet);
    _mm256_mask_storeu_epi16(dst + i, m, _mm512_cvtepi32_epi16(_mm512_mask_mov_epi32(rounded, nan, quieted)));
  }
}

}  // namespace kiln::cpu::avx512
