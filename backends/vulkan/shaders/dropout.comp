#version 450
// DROPOUT and DROPOUT_KEYED (kiln/ops.h): the mask of kiln/philox.h
// (philox.glsl). The scale and threshold come from the host, computed in
// double: the shader never divides a float.
// In place safe: x[i] is read before y[i] is written; the key is read whole.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "io.glsl"
#include "philox.glsl"

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

void main() {
  uint i = global_index();
  if (i >= p.count) return;
  uint kb = p.base[2];
  uint bits = dropout_bits(i, p.col0, p.row0_lo, p.row0_hi, p.period, p.stride_lo, p.stride_hi, key[kb], key[kb + 1],
                           key[kb + 2], key[kb + 3], p.site_in_key != 0u ? key[kb + 4] : p.site);
  y_st(p.base[0] + i, x_ld(p.base[1] + i) * ((bits >> 8) >= p.threshold ? p.scale : 0.0));
}
