// bf16/f16 <-> f32 bit conversions in integer arithmetic, bit-exact with
// kiln/half.h (the reference interpreter's): widening is exact, narrowing
// rounds to nearest even, past the largest finite value gives infinity, NaN
// stays NaN (quieted). Integer code, not packHalf2x16 or float16_t, whose
// rounding a device may choose; so no shaderFloat16 and no rounding-mode
// control are needed. Used by convert16.comp (staging) and io.glsl (16-bit
// loads and stores inside the shaders).

uint bf16_to_f32(uint h) { return h << 16; }

uint f32_to_bf16(uint u) {
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return (u >> 16) | 0x40u;  // NaN: quiet it
  // Just under half a unit, plus one when the kept part is odd: ties to even.
  return (u + 0x7FFFu + ((u >> 16) & 1u)) >> 16;
}

// Straight-line code with selects, no early returns: lanes of a SIMD
// implementation (lavapipe) or a GPU warp take one path whatever mix of
// values they hold.
uint f16_to_f32(uint h) {
  uint sign = (h & 0x8000u) << 16;
  uint em = h & 0x7FFFu;
  // Normal: rebias the exponent 15 -> 127; inf/NaN (exponent 31) once more
  // to 255, mantissa kept.
  uint normal = (em << 13) + 0x38000000u;
  normal += em >= 0x7C00u ? 0x38000000u : 0u;
  // Zero and subnormals: mant * 2^-24, exact in f32 (an integer below 2^10
  // times a power of two, the product normal or zero).
  uint small = floatBitsToUint(float(em) * 5.9604644775390625e-8);
  return sign | (em < 0x0400u ? small : normal);
}

uint f32_to_f16(uint u) {
  uint sign = (u >> 16) & 0x8000u;
  uint a = u & 0x7FFFFFFFu;
  // At or above 2^-14: rebias 127 -> 15, round the 13 dropped bits to
  // nearest even (a carry into the exponent is the right result). From
  // 65520 up (it rounds to 2^16), infinity included, that gives 0x7C00 or
  // more: min() makes it infinity.
  uint h = a - 0x38000000u;
  h = min((h + 0x0FFFu + ((h >> 13) & 1u)) >> 13, 0x7C00u);
  // Below 2^-14: a count of 2^-24 units, up to 0x400 (2^-14, the smallest
  // normal, whose bits are that count too). Scaling by 2^24 is exact and
  // roundEven is exact by definition, so no rounding mode enters: ties go
  // to even. An f32 subnormal (or one a device flushes) gives 0, as it
  // must. For larger a the conversion's value is unused.
  uint q = uint(int(roundEven(uintBitsToFloat(a) * 16777216.0)));
  // a < 2^31: signed comparisons (one instruction on AVX2, which has no
  // unsigned ones).
  int sa = int(a);
  uint r = sa < 0x38800000 ? q : h;
  r = sa > 0x7F800000 ? 0x7E00u | ((a >> 13) & 0x3FFu) : r;  // NaN: quiet it, keep the top of its payload
  return sign | r;
}
