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

#include "half.glsl"

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
