#version 450
// bf16/f16 storage staging (lowering.cpp's stage_in/stage_out): widens
// 16-bit values into f32 or rounds f32 values to 16 bits, one element per
// invocation. Bit-exact with kiln/half.h (the reference interpreter's
// conversions): widening is exact, narrowing rounds to nearest even, past
// the largest finite value gives infinity, NaN stays NaN (quieted). Integer
// arithmetic only, so the device needs storageBuffer16BitAccess (16-bit
// elements are stored one per invocation with no read-modify-write race on
// a shared 32-bit word) but no shaderFloat16 and no rounding-mode control.
// Specialization constant 1: 0 bf16 -> f32, 1 f16 -> f32, 2 f32 -> bf16,
// 3 f32 -> f16.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_shader_16bit_storage : require
#include "common.glsl"

layout(constant_id = 1) const uint kMode = 0;

// Both bindings are declared as both widths; a mode uses one of each.
layout(std430, set = 0, binding = 0) buffer Dst32 { uint dst32[]; };
layout(std430, set = 0, binding = 0) buffer Dst16 { uint16_t dst16[]; };
layout(std430, set = 0, binding = 1) buffer Src32 { uint src32[]; };
layout(std430, set = 0, binding = 1) buffer Src16 { uint16_t src16[]; };

layout(push_constant) uniform Push {
  uint base[2];  // in 4-byte words; a 16-bit window's index is 2 * base + i
  uint count;
} p;

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

void main() {
  uint i = global_index();
  if (i >= p.count) return;
  if (kMode == 0u) {
    dst32[p.base[0] + i] = bf16_to_f32(uint(src16[2u * p.base[1] + i]));
  } else if (kMode == 1u) {
    dst32[p.base[0] + i] = f16_to_f32(uint(src16[2u * p.base[1] + i]));
  } else if (kMode == 2u) {
    dst16[2u * p.base[0] + i] = uint16_t(f32_to_bf16(src32[p.base[1] + i]));
  } else {
    dst16[2u * p.base[0] + i] = uint16_t(f32_to_f16(src32[p.base[1] + i]));
  }
}
