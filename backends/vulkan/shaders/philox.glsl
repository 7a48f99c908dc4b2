// kiln/philox.h's Philox4x32-10 in GLSL, for dropout.comp and fused.comp's
// dropout stage. The rounds mirror kiln_philox4x32_10 line for line (and
// the OpenCL backend's codegen_dropout.cpp mirrors both); the conformance
// cases compare them bit for bit.

const uint kM0 = 0xD2511F53u;
const uint kM1 = 0xCD9E8D57u;
const uint kW0 = 0x9E3779B9u;
const uint kW1 = 0xBB67AE85u;
const int kRounds = 10;

uvec4 philox4x32_10(uvec4 ctr, uvec2 k) {
  uint c0 = ctr.x, c1 = ctr.y, c2 = ctr.z, c3 = ctr.w;
  uint k0 = k.x, k1 = k.y;
  for (int round = 0; round < kRounds; ++round) {
    if (round > 0) {
      k0 += kW0;
      k1 += kW1;
    }
    uint hi0, lo0, hi1, lo1;
    umulExtended(kM0, c0, hi0, lo0);
    umulExtended(kM1, c2, hi1, lo1);
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
  }
  return uvec4(c0, c1, c2, c3);
}

// The mask bits of element e = e0 + i of a dropout node (kiln/philox.h):
// e at row e / period, column e % period, draws Philox word g % 4 of block
// g / 4 with g = row * stride + col + offset (mod 2^64). No 64-bit integers
// (lavapipe and many devices lack shaderInt64): the uint64 index arithmetic
// is done in (lo, hi) 32-bit words with carries, modulo 2^64 as in C.
// col0 = e0 % period and row0 = e0 / period (64-bit) come from the host.
uint dropout_bits(uint i, uint col0, uint row0_lo, uint row0_hi, uint period, uint stride_lo, uint stride_hi,
                  uint seed, uint step, uint off_lo, uint off_hi, uint site) {
  uint c = col0 + i;  // col0 < 2^31 and i < 2^31: no overflow
  uint carry;
  uint row_lo = uaddCarry(row0_lo, c / period, carry);
  uint row_hi = row0_hi + carry;
  uint col = c % period;
  uint g_hi, g_lo;
  umulExtended(row_lo, stride_lo, g_hi, g_lo);
  g_hi += row_lo * stride_hi + row_hi * stride_lo;
  g_lo = uaddCarry(g_lo, col, carry);
  g_hi += carry;
  g_lo = uaddCarry(g_lo, off_lo, carry);
  g_hi += off_hi + carry;
  uvec4 r = philox4x32_10(uvec4((g_lo >> 2) | (g_hi << 30), g_hi >> 2, step, 0u), uvec2(seed, site));
  uint w = g_lo & 3u;
  return w == 0u ? r.x : w == 1u ? r.y : w == 2u ? r.z : r.w;
}
