/*
 * The two 8-bit float formats of FP8 training (Transformer Engine's, NVIDIA
 * Hopper's and OCP's): E4M3 (1 sign, 4 exponent bits of bias 7, 3 mantissa
 * bits; the "FN" variant: no infinities, S.1111.111 is NaN, so the largest
 * finite value is 448) and E5M2 (1 sign, 5 exponent bits of bias 15, 2
 * mantissa bits, IEEE-like: infinities and NaNs at exponent 31, largest
 * finite 57344). Both have subnormals (E4M3 down to 2^-9, E5M2 to 2^-16).
 *
 * Pure C (C11), integer arithmetic only, part of the plugin SDK like
 * kiln/half.h, so an FP8 value means the same bits in the reference
 * interpreter, every plugin and the tests, whatever the compiler's
 * floating-point flags.
 *
 * Narrowing is Transformer Engine's cast (CUDA's __nv_cvt_float_to_fp8 with
 * __NV_SATFINITE): round to nearest, ties to even; a value past the largest
 * finite one, infinity included, becomes the largest finite value of its
 * sign; NaN becomes 0x7F (a NaN in both formats). Widening is exact, and
 * every FP8 value is also exact in bf16 and f16.
 */
#ifndef KILN_FP8_H
#define KILN_FP8_H

#include <stdint.h>
#include <string.h>

#include "kiln/half.h" /* kiln_f32_bits_, kiln_f32_from_bits_ */

typedef enum kiln_fp8_format {
  KILN_FP8_E4M3 = 0, /* forward tensors (and every tensor under --fp8-format e4m3) */
  KILN_FP8_E5M2 = 1  /* gradients under --fp8-format hybrid: more range, less precision */
} kiln_fp8_format;

/* Mantissa bits, exponent bias, and the largest finite code (sign clear). */
static inline int kiln_fp8_mantissa_bits_(kiln_fp8_format f) { return f == KILN_FP8_E4M3 ? 3 : 2; }
static inline int kiln_fp8_bias_(kiln_fp8_format f) { return f == KILN_FP8_E4M3 ? 7 : 15; }
static inline uint32_t kiln_fp8_max_code_(kiln_fp8_format f) { return f == KILN_FP8_E4M3 ? 0x7Eu : 0x7Bu; }

/* The largest finite value: 448 (E4M3) or 57344 (E5M2), Transformer
 * Engine's fp8_max in its scale = fp8_max / amax. */
static inline float kiln_fp8_max(kiln_fp8_format f) { return f == KILN_FP8_E4M3 ? 448.0f : 57344.0f; }

static inline float kiln_fp8_to_f32(uint8_t code, kiln_fp8_format f) {
  const int M = kiln_fp8_mantissa_bits_(f), bias = kiln_fp8_bias_(f);
  const uint32_t sign = (uint32_t)(code & 0x80u) << 24;
  const uint32_t field = (uint32_t)(code & 0x7Fu) >> M, mantissa = code & ((1u << M) - 1u);
  uint32_t bits;
  if (f == KILN_FP8_E4M3 && (code & 0x7Fu) == 0x7Fu) {
    bits = sign | 0x7FC00000u; /* NaN */
  } else if (f == KILN_FP8_E5M2 && field == 31u) {
    bits = sign | 0x7F800000u | (mantissa != 0 ? 0x400000u : 0u); /* infinity or NaN */
  } else if (field == 0) {
    /* Subnormal: mantissa x 2^(1 - bias - M). Normalise it: shift the top
     * set bit up to the implicit-one place, lowering the exponent. */
    if (mantissa == 0) {
      bits = sign;
    } else {
      int exponent = 1 - bias; /* of the implicit one at bit M */
      uint32_t m = mantissa;
      while ((m & (1u << M)) == 0) {
        m <<= 1;
        --exponent;
      }
      bits = sign | (uint32_t)(exponent + 127) << 23 | (m & ((1u << M) - 1u)) << (23 - M);
    }
  } else {
    bits = sign | (field - (uint32_t)bias + 127u) << 23 | mantissa << (23 - M);
  }
  float out;
  memcpy(&out, &bits, sizeof out);
  return out;
}

/* Keeps x >> shift rounded to nearest, ties to even (shift 1..31). */
static inline uint32_t kiln_fp8_shift_rne_(uint32_t x, int shift) {
  const uint32_t kept = x >> shift, rest = x & ((1u << shift) - 1u), half = 1u << (shift - 1);
  return kept + ((rest > half || (rest == half && (kept & 1u))) ? 1u : 0u);
}

static inline uint8_t kiln_f32_to_fp8(float value, kiln_fp8_format f) {
  const int M = kiln_fp8_mantissa_bits_(f), bias = kiln_fp8_bias_(f);
  uint32_t u;
  memcpy(&u, &value, sizeof u);
  const uint32_t sign = (u >> 24) & 0x80u, a = u & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return 0x7Fu; /* NaN */
  const float largest = kiln_fp8_max(f);
  uint32_t largest_bits;
  memcpy(&largest_bits, &largest, sizeof largest_bits);
  if (a >= largest_bits) return (uint8_t)(sign | kiln_fp8_max_code_(f)); /* saturate (infinity too) */
  const int exponent = (int)(a >> 23) - 127;                             /* unbiased; -127 for f32 subnormals */
  const uint32_t significand = (a & 0x7FFFFFu) | (a >= 0x800000u ? 0x800000u : 0u); /* x 2^(e - 23) */
  uint32_t q;
  if (exponent < 1 - bias) {
    /* Below the smallest normal: a count of subnormal units 2^(1-bias-M),
     * significand x 2^(e - 23) / unit = significand >> shift. */
    const int e = a >= 0x800000u ? exponent : -126;
    const int shift = 23 + (1 - bias - M) - e;
    if (shift > 24) return (uint8_t)sign;        /* under half a unit: zero */
    q = kiln_fp8_shift_rne_(significand, shift); /* 2^M here is the smallest normal's code */
  } else {
    /* The exponent field and mantissa as one number, so a round-up that
     * carries out of the mantissa moves to the next binade by itself. */
    const uint32_t x = (uint32_t)(exponent + bias) << 23 | (a & 0x7FFFFFu);
    q = kiln_fp8_shift_rne_(x, 23 - M);
  }
  return (uint8_t)(sign | q);
}

/* x rounded to the nearest FP8 value (as narrowing and widening again). */
static inline float kiln_fp8_round(float value, kiln_fp8_format f) {
  return kiln_fp8_to_f32(kiln_f32_to_fp8(value, f), f);
}

/* ---- CAST_FP8's per-tensor scaling (kiln/ops.h), in integer arithmetic too,
 * so a device whose float division is not correctly rounded (OpenCL's and
 * Vulkan's single precision allow 2.5 ulp) still gives these bits. */

/* a / b rounded to nearest, ties to even (IEEE division), for a positive
 * normal a (CAST_FP8 divides 1 and the formats' maxima) and any b: a zero b
 * gives infinity, an infinite one zero, a NaN NaN; the quotient overflows to
 * infinity and underflows through the subnormals to zero. */
static inline float kiln_fp8_div(float a, float b) {
  const uint32_t ub = kiln_f32_bits_(b), sign = ub & 0x80000000u, ab = ub & 0x7FFFFFFFu;
  if (ab > 0x7F800000u) return kiln_f32_from_bits_(0x7FC00000u);
  if (ab == 0x7F800000u) return kiln_f32_from_bits_(sign);
  if (ab == 0) return kiln_f32_from_bits_(sign | 0x7F800000u);
  const uint32_t ua = kiln_f32_bits_(a);
  uint32_t ma = (ua & 0x7FFFFFu) | 0x800000u, mb = (ab & 0x7FFFFFu) | 0x800000u;
  int eb = (int)(ab >> 23);
  if (eb == 0) { /* a subnormal b: normalise its significand */
    mb = ab;
    eb = 1;
    while (mb < 0x800000u) {
      mb <<= 1;
      --eb;
    }
  }
  int e = (int)(ua >> 23) - eb + 127; /* the quotient's biased exponent once ma / mb is in [1, 2) */
  if (ma < mb) {
    ma <<= 1;
    --e;
  }
  if (e >= 255) return kiln_f32_from_bits_(sign | 0x7F800000u);
  const int keep = e >= 1 ? 24 : 23 + e; /* significant bits: fewer for a subnormal quotient */
  if (keep < 0) return kiln_f32_from_bits_(sign);
  /* Long division, a quotient bit a step; the remainder stays below 2^25. */
  uint32_t q = 0, r = ma;
  for (int i = 0; i < keep; ++i) {
    const uint32_t bit = r >= mb ? 1u : 0u;
    if (bit) r -= mb;
    q = q << 1 | bit;
    r <<= 1;
  }
  const uint32_t guard = r >= mb ? 1u : 0u;
  if (guard) r -= mb;
  if (guard && (r != 0 || (q & 1u))) ++q;
  if (e < 1) return kiln_f32_from_bits_(sign | q); /* a subnormal's bits (2^23: rounded up to the smallest normal) */
  if (q == 1u << 24) {                             /* rounding carried into the next binade */
    q >>= 1;
    if (++e >= 255) return kiln_f32_from_bits_(sign | 0x7F800000u);
  }
  return kiln_f32_from_bits_(sign | (uint32_t)e << 23 | (q & 0x7FFFFFu));
}

/* The running amax of a tensor: max(acc, |x|) with a NaN x passed over (as
 * fmaxf), on the bits, whose order is the values' for non-negative floats. */
static inline float kiln_fp8_amax(float acc, float x) {
  const uint32_t a = kiln_f32_bits_(x) & 0x7FFFFFFFu;
  return a <= 0x7F800000u && a > kiln_f32_bits_(acc) ? kiln_f32_from_bits_(a) : acc;
}

/* Transformer Engine's current ("tensorwise") scale, compute_scale_from_amax
 * with its recipe's defaults: fp8_max / amax; 1 for an amax of 0, infinity
 * or NaN; the largest finite float for a quotient past it. */
static inline float kiln_fp8_current_scale(float amax, kiln_fp8_format f) {
  const uint32_t a = kiln_f32_bits_(amax) & 0x7FFFFFFFu;
  if (a == 0 || a >= 0x7F800000u) return 1.0f;
  const float s = kiln_fp8_div(kiln_fp8_max(f), kiln_f32_from_bits_(a));
  return kiln_f32_bits_(s) == 0x7F800000u ? kiln_f32_from_bits_(0x7F7FFFFFu) : s;
}

/* One element of CAST_FP8: x * scale narrowed to FP8, widened, times
 * scale_inv (kiln_fp8_div(1, scale)); both products in f32. */
static inline float kiln_fp8_scaled_round(float x, float scale, float scale_inv, kiln_fp8_format f) {
  const float scaled = x * scale;
  return kiln_fp8_round(scaled, f) * scale_inv;
}

#endif /* KILN_FP8_H */
