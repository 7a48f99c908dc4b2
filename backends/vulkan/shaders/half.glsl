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

uint f16_to_f32(uint h) {
  uint sign = (h & 0x8000u) << 16;
  uint e = (h >> 10) & 0x1Fu, mant = h & 0x3FFu;
  if (e == 31u) return sign | 0x7F800000u | (mant << 13);  // inf, NaN
  if (e != 0u) return sign | ((e + 112u) << 23) | (mant << 13);
  if (mant == 0u) return sign;
  // A subnormal: move the leading 1 up to the implicit bit.
  int lead = findMSB(mant);  // 0..9
  uint shift = uint(10 - lead);
  return sign | ((113u - shift) << 23) | (((mant << shift) & 0x3FFu) << 13);
}

uint f32_to_f16(uint u) {
  uint sign = (u >> 16) & 0x8000u;
  uint a = u & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return sign | 0x7E00u | ((a & 0x7FFFFFu) >> 13);  // NaN
  if (a >= 0x477FF000u) return sign | 0x7C00u;  // 65520 and above: infinity
  if (a < 0x38800000u) {
    // Below 2^-14: a count of 2^-24 units, rounded to nearest even.
    uint e = a >> 23;
    if (e < 102u) return sign;
    uint mant = (a & 0x7FFFFFu) | 0x800000u;
    uint shift = 126u - e;  // 14..24
    uint q = mant >> shift;
    uint rem = mant & ((1u << shift) - 1u), half_unit = 1u << (shift - 1u);
    if (rem > half_unit || (rem == half_unit && (q & 1u) != 0u)) ++q;
    return sign | q;
  }
  // Rebias 127 -> 15, round the 13 dropped bits to nearest even.
  uint h = a - 0x38000000u;
  h += 0x0FFFu + ((h >> 13) & 1u);
  return sign | (h >> 13);
}
