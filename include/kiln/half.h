/*
 * The 16-bit float formats of kiln_dtype (kiln/ir.h): bfloat16 (KILN_BF16:
 * 1 sign, 8 exponent, 7 mantissa bits, f32's range) and IEEE binary16
 * (KILN_F16: 1 sign, 5 exponent, 10 mantissa bits), and their conversions
 * to and from f32.
 *
 * Pure C (C11), integer arithmetic only, part of the plugin SDK: the
 * reference interpreter, the cpu plugin and the tests share these so a
 * stored low-precision value means the same bits everywhere. (A plugin may
 * use faster instructions, e.g. F16C, where they give the same bits.)
 *
 * Narrowing rounds to nearest, ties to even (IEEE's default); a value past
 * the largest finite one becomes infinity; NaN stays NaN with its sign and
 * the top of its payload, quieted (as x86's F16C does). Widening is exact.
 */
#ifndef KILN_HALF_H
#define KILN_HALF_H

#include <stdint.h>
#include <string.h>

static inline uint32_t kiln_f32_bits_(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

static inline float kiln_f32_from_bits_(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

/* bf16 is the top half of an f32: widening appends 16 zero bits. */
static inline float kiln_bf16_to_f32(uint16_t h) { return kiln_f32_from_bits_((uint32_t)h << 16); }

static inline uint16_t kiln_f32_to_bf16(float f) {
  uint32_t u = kiln_f32_bits_(f);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return (uint16_t)((u >> 16) | 0x40u); /* NaN: quiet it */
  /* Add just under half a bf16 unit, plus one when the kept part is odd, so
   * an exact tie carries only into an odd value; a carry out of the largest
   * finite value reaches the infinity pattern, as overflow should. */
  u += 0x7FFFu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

static inline float kiln_f16_to_f32(uint16_t h) {
  const uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu, mant = h & 0x3FFu;
  if (exp == 31) return kiln_f32_from_bits_(sign | 0x7F800000u | (mant << 13)); /* inf, NaN */
  if (exp != 0) return kiln_f32_from_bits_(sign | ((exp + 112u) << 23) | (mant << 13));
  if (mant == 0) return kiln_f32_from_bits_(sign);
  /* A subnormal, mant * 2^-24: shift the leading 1 up to the implicit bit. */
  uint32_t e = 113; /* the f32 exponent of 2^-14, f16's smallest normal */
  uint32_t m = mant;
  while ((m & 0x400u) == 0) {
    m <<= 1;
    --e;
  }
  return kiln_f32_from_bits_(sign | (e << 23) | ((m & 0x3FFu) << 13));
}

static inline uint16_t kiln_f32_to_f16(float f) {
  const uint32_t u = kiln_f32_bits_(f);
  const uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
  const uint32_t abs = u & 0x7FFFFFFFu;
  if (abs > 0x7F800000u) return (uint16_t)(sign | 0x7E00u | ((abs & 0x7FFFFFu) >> 13)); /* NaN */
  /* 65520, halfway between f16's largest finite 65504 and 2^16, and above
   * round to infinity (the tie goes to the even 2^16). */
  if (abs >= 0x477FF000u) return (uint16_t)(sign | 0x7C00u);
  if (abs < 0x38800000u) {
    /* Below 2^-14: an f16 subnormal, a count of 2^-24 units. The f32 value
     * is mant * 2^(e - 150), so the count is mant >> (126 - e), rounded to
     * nearest even on the bits shifted out. */
    const uint32_t e = abs >> 23;
    if (e < 102) return sign; /* below 2^-25, half the smallest subnormal */
    const uint32_t mant = (abs & 0x7FFFFFu) | 0x800000u;
    const uint32_t shift = 126 - e; /* 14 .. 24 */
    uint32_t q = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1u), half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (q & 1u))) ++q;
    return (uint16_t)(sign | q); /* q = 0x400 is the smallest normal: still right */
  }
  /* Rebias the exponent from 127 to 15, then round the 13 dropped mantissa
   * bits to nearest even; a carry ripples into the exponent as it should. */
  uint32_t h = abs - 0x38000000u;
  h += 0x0FFFu + ((h >> 13) & 1u);
  return (uint16_t)(sign | (h >> 13));
}

#endif /* KILN_HALF_H */
