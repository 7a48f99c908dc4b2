#version 450
// DROPOUT and DROPOUT_KEYED (kiln/ops.h): the mask of kiln/philox.h. The Philox rounds mirror
// kiln_philox4x32_10 line for line (and the OpenCL backend's
// codegen_dropout.cpp mirrors both); the conformance cases compare them bit
// for bit. No 64-bit integers (lavapipe and many devices lack shaderInt64):
// the uint64 index arithmetic is done in (lo, hi) 32-bit words with carries,
// modulo 2^64 as in C. The scale and threshold come from the host, computed
// in double: the shader never divides a float.
// In place safe: x[i] is read before y[i] is written; the key is read whole.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "io.glsl"

KILN_BUFFER(0, y)
KILN_BUFFER(1, x)
// seed, step, offset_lo, offset_hi (and DROPOUT_KEYED's site)
layout(std430, set = 0, binding = 2) buffer K { uint key[]; };

layout(push_constant) uniform Push {
  uint base[3];
  uint count;     // elements of this dispatch
  uint col0;      // e0 % period of its first element e0
  uint row0_lo;   // e0 / period, 64-bit
  uint row0_hi;
  uint period;    // < 2^31 (the host checks)
  uint stride_lo; // 64-bit
  uint stride_hi;
  uint site;       // DROPOUT's
  uint threshold;  // llround(p * 2^24)
  float scale;     // (float)(1 / (1 - p))
  uint site_in_key; // DROPOUT_KEYED: the site is key word 4, so one pipeline serves every layer
} p;

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

void main() {
  uint i = global_index();
  if (i >= p.count) return;
  uint kb = p.base[2];
  uint seed = key[kb], step = key[kb + 1], off_lo = key[kb + 2], off_hi = key[kb + 3];
  // Element e = e0 + i is at row e / period, column e % period.
  uint c = p.col0 + i;  // col0 < 2^31 and i < 2^31: no overflow
  uint carry;
  uint row_lo = uaddCarry(p.row0_lo, c / p.period, carry);
  uint row_hi = p.row0_hi + carry;
  uint col = c % p.period;
  // g = row * stride + col + offset (mod 2^64).
  uint g_hi, g_lo;
  umulExtended(row_lo, p.stride_lo, g_hi, g_lo);
  g_hi += row_lo * p.stride_hi + row_hi * p.stride_lo;
  g_lo = uaddCarry(g_lo, col, carry);
  g_hi += carry;
  g_lo = uaddCarry(g_lo, off_lo, carry);
  g_hi += off_hi + carry;
  // Philox block g / 4, word g % 4.
  uvec4 r = philox4x32_10(uvec4((g_lo >> 2) | (g_hi << 30), g_hi >> 2, step, 0u), uvec2(seed, p.site_in_key != 0u ? key[kb + 4] : p.site));
  uint w = g_lo & 3u;
  uint bits = w == 0u ? r.x : w == 1u ? r.y : w == 2u ? r.z : r.w;
  y_st(p.base[0] + i, x_ld(p.base[1] + i) * ((bits >> 8) >= p.threshold ? p.scale : 0.0));
}
