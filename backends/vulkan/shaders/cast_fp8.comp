#version 450
// CAST_FP8 (kiln/ops.h) in three dispatches of this shader, by MODE:
//  0: workgroup g of a chunk of x writes the amax of its strided share to
//     partial[g];
//  1: one workgroup reduces a window of partials into the amax output,
//     folding in what the windows before it stored there (all but the
//     first); the last one also stores s (CURRENT ? the amax's current
//     scale : scale[0]) and s_inv = 1 / s in scales[0..1];
//  2: y[i] = fp8_scaled_round(x[i], s, s_inv), one invocation an element.
// Every value is an f32 bit pattern in a uint and every step is fp8.glsl's
// integer arithmetic, so y and amax are the reference's bit for bit. The
// amax is a max of non-negative, non-NaN bit patterns, which no split into
// chunks, workgroups or invocations changes: no atomics needed.
// The bindings are the same in every mode; one a mode does not use is bound
// to a window of another, read-only.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "io.glsl"
#include "fp8.glsl"

layout(constant_id = 1) const uint MODE = 0u;
layout(constant_id = 2) const uint FORMAT = 0u;   // kiln_fp8_format
layout(constant_id = 3) const bool CURRENT = false;

KILN_BUFFER(0, y)
KILN_BUFFER(1, x)
// y and x as f32 bits: an f32 element never goes through a float register,
// where a subnormal may be flushed.
layout(std430, set = 0, binding = 0) buffer YBits { uint y_bits[]; };
layout(std430, set = 0, binding = 1) buffer XBits { uint x_bits[]; };
layout(std430, set = 0, binding = 2) buffer Partial { uint partial[]; };
layout(std430, set = 0, binding = 3) buffer Scale { uint scale_in[]; };  // the op's scale input [1]
layout(std430, set = 0, binding = 4) buffer Amax { uint amax_out[]; };   // the op's amax output [1]
layout(std430, set = 0, binding = 5) buffer Scales { uint scales[]; };   // s, s_inv (scratch)

layout(push_constant) uniform Push {
  uint base[6];
  uint count;  // elements of this chunk (modes 0 and 2), partials of this window (mode 1)
  uint first;  // mode 1: the first window of partials
  uint last;   // mode 1: the last one
} p;

// x[i]'s f32 bits; a bf16/f16 element widened (exactly).
uint x_load(uint i) {
#ifdef KILN_16BIT
  uint dt = kiln_dtype(1u);
  if (dt != 0u) return dt == 1u ? bf16_to_f32(uint(x_u16[i])) : f16_to_f32(uint(x_u16[i]));
#endif
  return x_bits[i];
}

// Stores f32 bits as y[i]; a bf16/f16 y rounded once to nearest even.
void y_store(uint i, uint bits) {
#ifdef KILN_16BIT
  uint dt = kiln_dtype(0u);
  if (dt != 0u) {
    y_u16[i] = uint16_t(dt == 1u ? f32_to_bf16(bits) : f32_to_f16(bits));
    return;
  }
#endif
  y_bits[i] = bits;
}

// The largest of every invocation's v: a tree in shared memory, as
// common.glsl's group_max but on bits, so no float max sees a subnormal.
shared uint umax_[256];

uint group_umax(uint v) {
  uint t = gl_LocalInvocationID.x;
  umax_[t] = v;
  barrier();
  for (uint s = gl_WorkGroupSize.x / 2u; s > 0u; s >>= 1u) {
    if (t < s) umax_[t] = max(umax_[t], umax_[t + s]);
    barrier();
  }
  return umax_[0];
}

void chunk_amax() {
  uint t = gl_LocalInvocationID.x, g = gl_WorkGroupID.x, n = gl_WorkGroupSize.x;
  uint m = 0u;
  for (uint i = g * n + t; i < p.count; i += gl_NumWorkGroups.x * n) m = fp8_amax(m, x_load(p.base[1] + i));
  m = group_umax(m);
  if (t == 0u) partial[p.base[2] + g] = m;
}

void amax_and_scale() {
  uint t = gl_LocalInvocationID.x;
  uint m = 0u;
  for (uint i = t; i < p.count; i += gl_WorkGroupSize.x) m = max(m, partial[p.base[2] + i]);
  m = group_umax(m);
  if (t != 0u) return;
  if (p.first == 0u) m = max(m, amax_out[p.base[4]]);
  amax_out[p.base[4]] = m;
  if (p.last != 0u) {
    uint s = CURRENT ? fp8_current_scale(m, FORMAT) : scale_in[p.base[3]];
    scales[p.base[5]] = s;
    scales[p.base[5] + 1u] = fp8_div(0x3F800000u, s);  // 1 / s
  }
}

void cast_elements() {
  uint i = global_index();
  if (i >= p.count) return;
  y_store(p.base[0] + i, fp8_scaled_round(x_load(p.base[1] + i), scales[p.base[5]], scales[p.base[5] + 1u], FORMAT));
}

void main() {
  if (MODE == 0u)
    chunk_amax();
  else if (MODE == 1u)
    amax_and_scale();
  else
    cast_elements();
}
