// kiln/fp8.h in GLSL, on f32 bit patterns (uint) in integer arithmetic
// only, so CAST_FP8 gives the reference interpreter's bits on any device.
// Not float code: Vulkan's single-precision division is allowed 2.5 ulp,
// and any float instruction may flush a subnormal operand or result to zero
// (lavapipe reports shaderDenormPreserveFloat32 = false), while CAST_FP8's
// scale reciprocal is subnormal for a tiny amax. So the two products are
// integer multiplies rounded to nearest even too (f32_mul), which no
// compiler can contract into an fma either.
// A format is kiln_fp8_format's code: 0 E4M3, 1 E5M2.

uint fp8_mantissa_bits(uint f) { return f == 0u ? 3u : 2u; }
int fp8_bias(uint f) { return f == 0u ? 7 : 15; }
uint fp8_max_code(uint f) { return f == 0u ? 0x7Eu : 0x7Bu; }
uint fp8_max_bits(uint f) { return f == 0u ? 0x43E00000u : 0x47600000u; }  // 448, 57344

// kiln_fp8_to_f32.
uint fp8_to_f32(uint code, uint f) {
  uint M = fp8_mantissa_bits(f);
  int bias = fp8_bias(f);
  uint sign = (code & 0x80u) << 24;
  uint field = (code & 0x7Fu) >> M, mantissa = code & ((1u << M) - 1u);
  if (f == 0u && (code & 0x7Fu) == 0x7Fu) return sign | 0x7FC00000u;  // NaN
  if (f == 1u && field == 31u) return sign | 0x7F800000u | (mantissa != 0u ? 0x400000u : 0u);
  if (field == 0u) {
    if (mantissa == 0u) return sign;
    // Subnormal: shift the top set bit up to the implicit-one place (bit
    // M), lowering the exponent by as much (fp8.h's loop, in one step).
    uint up = M - uint(findMSB(mantissa));
    int exponent = 1 - bias - int(up);
    return sign | uint(exponent + 127) << 23 | ((mantissa << up) & ((1u << M) - 1u)) << (23u - M);
  }
  return sign | (field - uint(bias) + 127u) << 23 | mantissa << (23u - M);
}

// x >> shift rounded to nearest, ties to even (shift 1..31).
uint fp8_shift_rne(uint x, uint shift) {
  uint kept = x >> shift, rest = x & ((1u << shift) - 1u), half_unit = 1u << (shift - 1u);
  return kept + (rest > half_unit || (rest == half_unit && (kept & 1u) != 0u) ? 1u : 0u);
}

// kiln_f32_to_fp8: nearest even, saturating, NaN to 0x7F.
uint f32_to_fp8(uint u, uint f) {
  uint M = fp8_mantissa_bits(f);
  int bias = fp8_bias(f);
  uint sign = (u >> 24) & 0x80u, a = u & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return 0x7Fu;
  if (a >= fp8_max_bits(f)) return sign | fp8_max_code(f);
  int exponent = int(a >> 23) - 127;
  uint significand = (a & 0x7FFFFFu) | (a >= 0x800000u ? 0x800000u : 0u);
  if (exponent < 1 - bias) {
    // A count of subnormal units 2^(1-bias-M).
    int e = a >= 0x800000u ? exponent : -126;
    int shift = 23 + (1 - bias - int(M)) - e;
    if (shift > 24) return sign;
    return sign | fp8_shift_rne(significand, uint(shift));
  }
  // Exponent field and mantissa as one number: a carry moves the binade.
  uint x = uint(exponent + bias) << 23 | (a & 0x7FFFFFu);
  return sign | fp8_shift_rne(x, 23u - M);
}

// kiln_fp8_div: a / b to nearest even by long division, for a positive
// normal a and any b.
uint fp8_div(uint ua, uint ub) {
  uint sign = ub & 0x80000000u, ab = ub & 0x7FFFFFFFu;
  if (ab > 0x7F800000u) return 0x7FC00000u;
  if (ab == 0x7F800000u) return sign;
  if (ab == 0u) return sign | 0x7F800000u;
  uint ma = (ua & 0x7FFFFFu) | 0x800000u, mb = (ab & 0x7FFFFFu) | 0x800000u;
  int eb = int(ab >> 23);
  if (eb == 0) {  // a subnormal b: normalise its significand
    mb = ab;
    eb = 1;
    while (mb < 0x800000u) {
      mb <<= 1;
      --eb;
    }
  }
  int e = int(ua >> 23) - eb + 127;  // the quotient's biased exponent once ma / mb is in [1, 2)
  if (ma < mb) {
    ma <<= 1;
    --e;
  }
  if (e >= 255) return sign | 0x7F800000u;
  int keep = e >= 1 ? 24 : 23 + e;  // fewer significant bits for a subnormal quotient
  if (keep < 0) return sign;
  uint q = 0u, r = ma;  // r stays below 2^25
  for (int i = 0; i < keep; ++i) {
    uint bit = r >= mb ? 1u : 0u;
    if (bit != 0u) r -= mb;
    q = q << 1 | bit;
    r <<= 1;
  }
  uint guard = r >= mb ? 1u : 0u;
  if (guard != 0u) r -= mb;
  if (guard != 0u && (r != 0u || (q & 1u) != 0u)) ++q;
  if (e < 1) return sign | q;  // a subnormal's bits (2^23: the smallest normal)
  if (q == 1u << 24) {         // rounding carried into the next binade
    q >>= 1;
    if (++e >= 255) return sign | 0x7F800000u;
  }
  return sign | uint(e) << 23 | (q & 0x7FFFFFu);
}

// The 48-bit hi:lo >> shift rounded to nearest, ties to even (shift 23..48;
// no GLSL shift reaches 32).
uint f32_mul_round(uint hi, uint lo, uint shift) {
  uint kept = shift >= 32u ? hi >> (shift - 32u) : (lo >> shift) | (hi << (32u - shift));
  uint r = shift - 1u;  // the round bit
  uint round_bit = r >= 32u ? (hi >> (r - 32u)) & 1u : (lo >> r) & 1u;
  bool sticky = r >= 32u ? lo != 0u || (hi & ((1u << (r - 32u)) - 1u)) != 0u : (lo & ((1u << r) - 1u)) != 0u;
  return kept + (round_bit != 0u && (sticky || (kept & 1u) != 0u) ? 1u : 0u);
}

// A finite nonzero magnitude's 24-bit significand (normalised where
// subnormal) and biased exponent e: a = significand x 2^(e - 150).
uint f32_significand(uint a, out int e) {
  if (a >= 0x800000u) {
    e = int(a >> 23);
    return (a & 0x7FFFFFu) | 0x800000u;
  }
  uint up = 23u - uint(findMSB(a));
  e = 1 - int(up);
  return a << up;
}

// a * b as IEEE binary32 multiplication rounds it (nearest even, subnormals
// kept, overflow to infinity). A NaN operand comes back quieted, the first
// one if both; infinity x 0 is x86's default NaN, as the reference computes
// it on its hosts.
uint f32_mul(uint a, uint b) {
  uint sign = (a ^ b) & 0x80000000u, aa = a & 0x7FFFFFFFu, ab = b & 0x7FFFFFFFu;
  if (aa > 0x7F800000u) return a | 0x400000u;
  if (ab > 0x7F800000u) return b | 0x400000u;
  if (aa == 0x7F800000u || ab == 0x7F800000u) return aa == 0u || ab == 0u ? 0xFFC00000u : sign | 0x7F800000u;
  if (aa == 0u || ab == 0u) return sign;
  int ea, eb;
  uint ma = f32_significand(aa, ea), mb = f32_significand(ab, eb);
  uint hi, lo;
  umulExtended(ma, mb, hi, lo);  // the product, in [2^46, 2^48) x 2^(ea + eb - 300)
  int top = hi >= 0x8000u ? 47 : 46;
  int e = ea + eb - 127 + (top - 46);  // the result's biased exponent, if normal
  if (e >= 255) return sign | 0x7F800000u;
  // 24 significant bits for a normal result; a subnormal one is a count of
  // 2^-149 units, product >> (151 - ea - eb).
  int shift = max(top - 23, 151 - ea - eb);
  if (shift >= 49) return sign;  // under half the smallest subnormal
  uint q = f32_mul_round(hi, lo, uint(shift));
  if (e < 1) return sign | q;  // 2^23: rounded up to the smallest normal
  // q in [2^23, 2^24]: a carry out of the significand moves the binade.
  return sign | min((uint(e - 1) << 23) + q, 0x7F800000u);
}

// kiln_fp8_amax: max(acc, |x|) on the bits, a NaN x passed over.
uint fp8_amax(uint acc, uint x) {
  uint a = x & 0x7FFFFFFFu;
  return a <= 0x7F800000u && a > acc ? a : acc;
}

// kiln_fp8_current_scale: fp8_max / amax; 1 for an amax of 0, infinity or
// NaN; the largest finite float for a quotient past it.
uint fp8_current_scale(uint amax, uint f) {
  uint a = amax & 0x7FFFFFFFu;
  if (a == 0u || a >= 0x7F800000u) return 0x3F800000u;
  uint s = fp8_div(fp8_max_bits(f), a);
  return s == 0x7F800000u ? 0x7F7FFFFFu : s;
}

// kiln_fp8_scaled_round: x * scale narrowed to FP8, widened, times scale_inv.
uint fp8_scaled_round(uint x, uint scale, uint scale_inv, uint f) {
  return f32_mul(fp8_to_f32(f32_to_fp8(f32_mul(x, scale), f), f), scale_inv);
}
