// A minimal SIMD vocabulary for the CPU kernels, chosen by the compiler flags
// of the translation unit that includes it: AVX-512 F/BW/VL/DQ (16 lanes) in
// kernels_avx512.cpp, AVX2+FMA (8 lanes) in kernels_avx2.cpp, SSE2 (4 lanes,
// every x86-64) in the baseline files, plain scalar elsewhere. Kernels are
// written once against it and compiled three times.
//
// Everything lives in a namespace named after the ISA (kiln::cpu::avx512 /
// kiln::cpu::avx2 / kiln::cpu::base) so the compilations never share an
// inline symbol: the linker could otherwise keep a wider copy for a narrower
// path and crash older CPUs.
//
// Reductions use a fixed lane layout and a fixed combine order, so results
// are bitwise reproducible for a given ISA.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__AVX512DQ__) && defined(__FMA__)
#include <immintrin.h>
#define KILN_CPU_ISA avx512
#define KILN_CPU_SIMD_AVX512 1
#elif defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define KILN_CPU_ISA avx2
#define KILN_CPU_SIMD_AVX2 1
#elif defined(__SSE2__)
#include <emmintrin.h>
#define KILN_CPU_ISA base
#define KILN_CPU_SIMD_SSE2 1
#else
#define KILN_CPU_ISA base
#define KILN_CPU_SIMD_SCALAR 1
#endif

namespace kiln::cpu::KILN_CPU_ISA::simd {

#if defined(KILN_CPU_SIMD_AVX512)

constexpr int W = 16;
struct V {
  __m512 v;
};
inline V load(const float* p) { return {_mm512_loadu_ps(p)}; }
inline void store(float* p, V a) { _mm512_storeu_ps(p, a.v); }
inline V set1(float x) { return {_mm512_set1_ps(x)}; }
inline V operator+(V a, V b) { return {_mm512_add_ps(a.v, b.v)}; }
inline V operator-(V a, V b) { return {_mm512_sub_ps(a.v, b.v)}; }
inline V operator*(V a, V b) { return {_mm512_mul_ps(a.v, b.v)}; }
inline V operator/(V a, V b) { return {_mm512_div_ps(a.v, b.v)}; }
inline V fma(V a, V b, V c) { return {_mm512_fmadd_ps(a.v, b.v, c.v)}; }    // a*b + c
inline V fnma(V a, V b, V c) { return {_mm512_fnmadd_ps(a.v, b.v, c.v)}; }  // c - a*b
// As on AVX2: the second operand comes back when either is NaN.
inline V max(V a, V b) { return {_mm512_max_ps(a.v, b.v)}; }
inline V min(V a, V b) { return {_mm512_min_ps(a.v, b.v)}; }
inline V sqrt(V a) { return {_mm512_sqrt_ps(a.v)}; }
inline V zero_below(V a, V x, V lo) { return {_mm512_maskz_mov_ps(_mm512_cmp_ps_mask(x.v, lo.v, _CMP_NLT_UQ), a.v)}; }
inline V keep_between(V a, V x, V lo, V hi) {
  const __mmask16 in = _mm512_cmp_ps_mask(x.v, lo.v, _CMP_GE_OQ) & _mm512_cmp_ps_mask(x.v, hi.v, _CMP_LE_OQ);
  return {_mm512_maskz_mov_ps(in, a.v)};
}
inline V round(V a) { return {_mm512_roundscale_ps(a.v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)}; }
inline V pow2i(V n) {
  __m512i e = _mm512_add_epi32(_mm512_cvtps_epi32(n.v), _mm512_set1_epi32(127));
  return {_mm512_castsi512_ps(_mm512_slli_epi32(e, 23))};
}
// "v": any of the 32 vector registers AVX-512 can name.
inline V opaque(V a) {
  __asm__("" : "+v"(a.v));
  return a;
}
// Halves added pairwise down to one lane, in a fixed order (not
// _mm512_reduce_add_ps, whose order is the compiler's).
inline __m256 halves_add(__m512 a) { return _mm256_add_ps(_mm512_castps512_ps256(a), _mm512_extractf32x8_ps(a, 1)); }
inline __m256 halves_max(__m512 a) { return _mm256_max_ps(_mm512_castps512_ps256(a), _mm512_extractf32x8_ps(a, 1)); }
inline float hsum(V a) {
  const __m256 h = halves_add(a.v);
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
  return _mm_cvtss_f32(s);
}
inline float hmax(V a) {
  const __m256 h = halves_max(a.v);
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_shuffle_ps(s, s, 1));
  return _mm_cvtss_f32(s);
}

inline double sum_squares_f64(const float* x, int64_t n) {
  __m512d a0 = _mm512_setzero_pd(), a1 = _mm512_setzero_pd();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __m512 v = _mm512_loadu_ps(x + i);
    __m512d lo = _mm512_cvtps_pd(_mm512_castps512_ps256(v));
    __m512d hi = _mm512_cvtps_pd(_mm512_extractf32x8_ps(v, 1));
    a0 = _mm512_fmadd_pd(lo, lo, a0);
    a1 = _mm512_fmadd_pd(hi, hi, a1);
  }
  alignas(64) double t[8];
  _mm512_store_pd(t, _mm512_add_pd(a0, a1));
  double s = ((t[0] + t[1]) + (t[2] + t[3])) + ((t[4] + t[5]) + (t[6] + t[7]));
  for (; i < n; ++i) s += static_cast<double>(x[i]) * x[i];
  return s;
}

#elif defined(KILN_CPU_SIMD_AVX2)

constexpr int W = 8;
struct V {
  __m256 v;
};
inline V load(const float* p) { return {_mm256_loadu_ps(p)}; }
inline void store(float* p, V a) { _mm256_storeu_ps(p, a.v); }
inline V set1(float x) { return {_mm256_set1_ps(x)}; }
inline V operator+(V a, V b) { return {_mm256_add_ps(a.v, b.v)}; }
inline V operator-(V a, V b) { return {_mm256_sub_ps(a.v, b.v)}; }
inline V operator*(V a, V b) { return {_mm256_mul_ps(a.v, b.v)}; }
inline V operator/(V a, V b) { return {_mm256_div_ps(a.v, b.v)}; }
inline V fma(V a, V b, V c) { return {_mm256_fmadd_ps(a.v, b.v, c.v)}; }    // a*b + c
inline V fnma(V a, V b, V c) { return {_mm256_fnmadd_ps(a.v, b.v, c.v)}; }  // c - a*b
// Operand order matters: the x86 min/max return the second operand when
// either is NaN, so putting the data second lets NaN through.
inline V max(V a, V b) { return {_mm256_max_ps(a.v, b.v)}; }
inline V min(V a, V b) { return {_mm256_min_ps(a.v, b.v)}; }
inline V sqrt(V a) { return {_mm256_sqrt_ps(a.v)}; }
// a where !(x < lo) (NaN x keeps a), else 0.
inline V zero_below(V a, V x, V lo) { return {_mm256_and_ps(a.v, _mm256_cmp_ps(x.v, lo.v, _CMP_NLT_UQ))}; }
// a where lo <= x <= hi (ordered: NaN x gives 0), else 0.
inline V keep_between(V a, V x, V lo, V hi) {
  __m256 in = _mm256_and_ps(_mm256_cmp_ps(x.v, lo.v, _CMP_GE_OQ), _mm256_cmp_ps(x.v, hi.v, _CMP_LE_OQ));
  return {_mm256_and_ps(a.v, in)};
}
inline V round(V a) { return {_mm256_round_ps(a.v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)}; }
// 2^n for integral n in [-126, 127].
inline V pow2i(V n) {
  __m256i e = _mm256_add_epi32(_mm256_cvtps_epi32(n.v), _mm256_set1_epi32(127));
  return {_mm256_castsi256_ps(_mm256_slli_epi32(e, 23))};
}
// GCC may fuse a*b + c into one FMA (-ffp-contract=fast) when FMA is
// available, skipping the rounding of a*b. Passing a product through
// opaque() keeps it rounded where an exact cancellation against the same
// rounded product is expected elsewhere.
inline V opaque(V a) {
  __asm__("" : "+x"(a.v));
  return a;
}
inline float hsum(V a) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(a.v), _mm256_extractf128_ps(a.v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
  return _mm_cvtss_f32(s);
}
inline float hmax(V a) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(a.v), _mm256_extractf128_ps(a.v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_shuffle_ps(s, s, 1));
  return _mm_cvtss_f32(s);
}

// Sum of x[i]^2 in double.
inline double sum_squares_f64(const float* x, int64_t n) {
  __m256d a0 = _mm256_setzero_pd(), a1 = _mm256_setzero_pd();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 v = _mm256_loadu_ps(x + i);
    __m256d lo = _mm256_cvtps_pd(_mm256_castps256_ps128(v));
    __m256d hi = _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1));
    a0 = _mm256_fmadd_pd(lo, lo, a0);
    a1 = _mm256_fmadd_pd(hi, hi, a1);
  }
  alignas(32) double t[4];
  _mm256_store_pd(t, _mm256_add_pd(a0, a1));
  double s = (t[0] + t[1]) + (t[2] + t[3]);
  for (; i < n; ++i) s += static_cast<double>(x[i]) * x[i];
  return s;
}

#elif defined(KILN_CPU_SIMD_SSE2)

constexpr int W = 4;
struct V {
  __m128 v;
};
inline V load(const float* p) { return {_mm_loadu_ps(p)}; }
inline void store(float* p, V a) { _mm_storeu_ps(p, a.v); }
inline V set1(float x) { return {_mm_set1_ps(x)}; }
inline V operator+(V a, V b) { return {_mm_add_ps(a.v, b.v)}; }
inline V operator-(V a, V b) { return {_mm_sub_ps(a.v, b.v)}; }
inline V operator*(V a, V b) { return {_mm_mul_ps(a.v, b.v)}; }
inline V operator/(V a, V b) { return {_mm_div_ps(a.v, b.v)}; }
inline V fma(V a, V b, V c) { return {_mm_add_ps(_mm_mul_ps(a.v, b.v), c.v)}; }
inline V fnma(V a, V b, V c) { return {_mm_sub_ps(c.v, _mm_mul_ps(a.v, b.v))}; }
inline V max(V a, V b) { return {_mm_max_ps(a.v, b.v)}; }
inline V min(V a, V b) { return {_mm_min_ps(a.v, b.v)}; }
inline V sqrt(V a) { return {_mm_sqrt_ps(a.v)}; }
inline V zero_below(V a, V x, V lo) { return {_mm_and_ps(a.v, _mm_cmpnlt_ps(x.v, lo.v))}; }
inline V keep_between(V a, V x, V lo, V hi) {
  return {_mm_and_ps(a.v, _mm_and_ps(_mm_cmpge_ps(x.v, lo.v), _mm_cmple_ps(x.v, hi.v)))};
}
// cvtps rounds to nearest-even under the default MXCSR; callers keep |a| < 2^31.
inline V round(V a) { return {_mm_cvtepi32_ps(_mm_cvtps_epi32(a.v))}; }
inline V pow2i(V n) {
  __m128i e = _mm_add_epi32(_mm_cvtps_epi32(n.v), _mm_set1_epi32(127));
  return {_mm_castsi128_ps(_mm_slli_epi32(e, 23))};
}
inline V opaque(V a) { return a; }  // no FMA here, nothing to contract
inline float hsum(V a) {
  __m128 s = _mm_add_ps(a.v, _mm_movehl_ps(a.v, a.v));
  s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
  return _mm_cvtss_f32(s);
}
inline float hmax(V a) {
  __m128 s = _mm_max_ps(a.v, _mm_movehl_ps(a.v, a.v));
  s = _mm_max_ss(s, _mm_shuffle_ps(s, s, 1));
  return _mm_cvtss_f32(s);
}

inline double sum_squares_f64(const float* x, int64_t n) {
  __m128d a0 = _mm_setzero_pd(), a1 = _mm_setzero_pd();
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    __m128 v = _mm_loadu_ps(x + i);
    __m128d lo = _mm_cvtps_pd(v);
    __m128d hi = _mm_cvtps_pd(_mm_movehl_ps(v, v));
    a0 = _mm_add_pd(a0, _mm_mul_pd(lo, lo));
    a1 = _mm_add_pd(a1, _mm_mul_pd(hi, hi));
  }
  alignas(16) double t[2];
  _mm_store_pd(t, _mm_add_pd(a0, a1));
  double s = t[0] + t[1];
  for (; i < n; ++i) s += static_cast<double>(x[i]) * x[i];
  return s;
}

#else  // scalar

constexpr int W = 1;
struct V {
  float v;
};
inline V load(const float* p) { return {*p}; }
inline void store(float* p, V a) { *p = a.v; }
inline V set1(float x) { return {x}; }
inline V operator+(V a, V b) { return {a.v + b.v}; }
inline V operator-(V a, V b) { return {a.v - b.v}; }
inline V operator*(V a, V b) { return {a.v * b.v}; }
inline V operator/(V a, V b) { return {a.v / b.v}; }
inline V fma(V a, V b, V c) { return {a.v * b.v + c.v}; }
inline V fnma(V a, V b, V c) { return {c.v - a.v * b.v}; }
inline V max(V a, V b) { return {a.v > b.v ? a.v : b.v}; }
inline V min(V a, V b) { return {a.v < b.v ? a.v : b.v}; }
inline V sqrt(V a) { return {std::sqrt(a.v)}; }
inline V zero_below(V a, V x, V lo) { return {x.v < lo.v ? 0.0f : a.v}; }
inline V keep_between(V a, V x, V lo, V hi) { return {lo.v <= x.v && x.v <= hi.v ? a.v : 0.0f}; }
inline V round(V a) { return {std::nearbyint(a.v)}; }
inline V pow2i(V n) {
  int32_t e = (static_cast<int32_t>(n.v) + 127) << 23;
  float f;
  std::memcpy(&f, &e, 4);
  return {f};
}
inline V opaque(V a) { return a; }
inline float hsum(V a) { return a.v; }
inline float hmax(V a) { return a.v; }
inline double sum_squares_f64(const float* x, int64_t n) {
  double s = 0.0;
  for (int64_t i = 0; i < n; ++i) s += static_cast<double>(x[i]) * x[i];
  return s;
}

#endif

inline V zero() { return set1(0.0f); }

// Tails: the last n % W elements (0 < n < W) go through the same vector
// code as the rest, so every element is computed (and rounded) alike.
#if defined(KILN_CPU_SIMD_AVX512)
// Masked loads/stores: masked-out lanes are neither read nor written.
inline __mmask16 tail_mask(int64_t n) { return static_cast<__mmask16>((1u << n) - 1u); }
inline V load_partial(const float* p, int64_t n, float pad = 0.0f) {
  return {_mm512_mask_loadu_ps(_mm512_set1_ps(pad), tail_mask(n), p)};
}
inline void store_partial(float* p, V a, int64_t n) { _mm512_mask_storeu_ps(p, tail_mask(n), a.v); }
#elif defined(KILN_CPU_SIMD_AVX2)
// Masked loads/stores: no memory outside [p, p + n) is touched, and no
// libc memcpy call per row tail.
inline __m256i tail_mask(int64_t n) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
inline V load_partial(const float* p, int64_t n, float pad = 0.0f) {
  __m256i m = tail_mask(n);
  __m256 v = _mm256_maskload_ps(p, m);
  return {_mm256_blendv_ps(_mm256_set1_ps(pad), v, _mm256_castsi256_ps(m))};
}
inline void store_partial(float* p, V a, int64_t n) { _mm256_maskstore_ps(p, tail_mask(n), a.v); }
#else
inline V load_partial(const float* p, int64_t n, float pad = 0.0f) {
  float t[W];
  for (int i = 0; i < W; ++i) t[i] = i < n ? p[i] : pad;
  return load(t);
}
inline void store_partial(float* p, V a, int64_t n) {
  float t[W];
  store(t, a);
  for (int i = 0; i < n; ++i) p[i] = t[i];
}
#endif

// exp(x), Cephes-style: x = n ln2 + r, |r| <= ln2/2, degree-6 polynomial,
// scaled by 2^n. About 2 ulp. Below -87.33 (where e^x would be denormal)
// the result is 0, so exp(-inf) = 0 as masking expects; above 88 it
// saturates at e^88 (callers only pass x <= 0 or clamp first). NaN
// propagates.
inline V exp(V x) {
  const V lo = set1(-87.33f);
  V xc = min(set1(88.0f), x);
  xc = max(lo, xc);
  V n = round(xc * set1(1.44269504088896341f));
  V r = fnma(n, set1(0.693359375f), xc);
  r = fnma(n, set1(-2.12194440e-4f), r);
  V p = set1(1.9875691500e-4f);
  p = fma(p, r, set1(1.3981999507e-3f));
  p = fma(p, r, set1(8.3334519073e-3f));
  p = fma(p, r, set1(4.1665795894e-2f));
  p = fma(p, r, set1(1.6666665459e-1f));
  p = fma(p, r, set1(5.0000001201e-1f));
  p = fma(p, r * r, r + set1(1.0f));
  return zero_below(p * pow2i(n), x, lo);
}

// y[i] = f(x[i]) over [0, n), W lanes at a time. Each block is loaded before
// it is stored, so y may be x.
template <class F>
inline void map1(const float* x, float* y, int64_t n, F&& f) {
  int64_t i = 0;
  for (; i + W <= n; i += W) store(y + i, f(load(x + i)));
  if (i < n) store_partial(y + i, f(load_partial(x + i, n - i)), n - i);
}

// y[i] = f(a[i], b[i]); y may be a or b.
template <class F>
inline void map2(const float* a, const float* b, float* y, int64_t n, F&& f) {
  int64_t i = 0;
  for (; i + W <= n; i += W) store(y + i, f(load(a + i), load(b + i)));
  if (i < n) store_partial(y + i, f(load_partial(a + i, n - i), load_partial(b + i, n - i)), n - i);
}

// ---- row reductions: two accumulators for latency, fixed combine order.

inline float sum(const float* x, int64_t n) {
  V a0 = zero(), a1 = zero();
  int64_t i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    a0 = a0 + load(x + i);
    a1 = a1 + load(x + i + W);
  }
  if (i + W <= n) {
    a0 = a0 + load(x + i);
    i += W;
  }
  if (i < n) a1 = a1 + load_partial(x + i, n - i);
  return hsum(a0 + a1);
}

// sum (x[i] - c)^2
inline float sum_sq_dev(const float* x, int64_t n, float c) {
  V a0 = zero(), a1 = zero(), vc = set1(c);
  int64_t i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    V d0 = load(x + i) - vc, d1 = load(x + i + W) - vc;
    a0 = fma(d0, d0, a0);
    a1 = fma(d1, d1, a1);
  }
  if (i + W <= n) {
    V d = load(x + i) - vc;
    a0 = fma(d, d, a0);
    i += W;
  }
  if (i < n) {
    V d = load_partial(x + i, n - i, c) - vc;
    a1 = fma(d, d, a1);
  }
  return hsum(a0 + a1);
}

inline float dot(const float* a, const float* b, int64_t n) {
  V a0 = zero(), a1 = zero();
  int64_t i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    a0 = fma(load(a + i), load(b + i), a0);
    a1 = fma(load(a + i + W), load(b + i + W), a1);
  }
  if (i + W <= n) {
    a0 = fma(load(a + i), load(b + i), a0);
    i += W;
  }
  if (i < n) a1 = fma(load_partial(a + i, n - i), load_partial(b + i, n - i), a1);
  return hsum(a0 + a1);
}

// max over i of s * x[i] (n >= 1).
inline float max_scaled(const float* x, int64_t n, float s) {
  V vs = set1(s), a0 = set1(-INFINITY), a1 = a0;
  int64_t i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    a0 = max(a0, load(x + i) * vs);
    a1 = max(a1, load(x + i + W) * vs);
  }
  if (i + W <= n) {
    a0 = max(a0, load(x + i) * vs);
    i += W;
  }
  if (i < n) {
    // Pad with a copy of a real element so the padding never wins.
    V t = load_partial(x + i, n - i, x[i]);
    a1 = max(a1, t * vs);
  }
  return hmax(max(a0, a1));
}

// y[i] = exp(s * x[i] - m); returns the sum of the y[i]. y may be x.
inline float exp_store_sum(const float* x, float s, float m, float* y, int64_t n) {
  V vs = set1(s), vnm = set1(-m), acc = zero();
  int64_t i = 0;
  for (; i + W <= n; i += W) {
    V e = exp(fma(load(x + i), vs, vnm));
    store(y + i, e);
    acc = acc + e;
  }
  float total = hsum(acc);
  if (i < n) {
    V e = exp(fma(load_partial(x + i, n - i), vs, vnm));
    store_partial(y + i, e, n - i);
    float t[W];
    store(t, e);
    for (int64_t j = 0; j < n - i; ++j) total += t[j];
  }
  return total;
}

// sum over i of exp(x[i] - m), nothing stored.
inline float exp_sum(const float* x, float m, int64_t n) {
  V vm = set1(m), a0 = zero(), a1 = zero();
  int64_t i = 0;
  for (; i + 2 * W <= n; i += 2 * W) {
    a0 = a0 + exp(load(x + i) - vm);
    a1 = a1 + exp(load(x + i + W) - vm);
  }
  if (i + W <= n) {
    a0 = a0 + exp(load(x + i) - vm);
    i += W;
  }
  float total = hsum(a0 + a1);
  for (; i < n; ++i) {
    float t[W];
    store(t, exp(set1(x[i] - m)));
    total += t[0];
  }
  return total;
}

// y[i] = x[i] * s; y may be x.
inline void scale(const float* x, float s, float* y, int64_t n) {
  V vs = set1(s);
  map1(x, y, n, [vs](V v) { return v * vs; });
}

}  // namespace kiln::cpu::KILN_CPU_ISA::simd
