#version 450
// dst[r * dst_stride + i] = src[r * src_stride + i] for r < rows, i < inner:
// RESHAPE, SPLIT and CONCAT as bit copies (any 4-byte dtype).
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "io.glsl"

layout(std430, set = 0, binding = 0) buffer Dst { uint dst[]; };
layout(std430, set = 0, binding = 1) buffer Src { uint src[]; };
#ifdef KILN_16BIT
layout(std430, set = 0, binding = 0) buffer Dst16 { uint16_t dst16[]; };
layout(std430, set = 0, binding = 1) buffer Src16 { uint16_t src16[]; };
#endif

layout(push_constant) uniform Push {
  uint base[2];
  uint count;  // rows * inner
  uint inner;
  uint src_stride;
  uint dst_stride;
} p;

#ifdef KILN_16BIT
#include "copy16.glsl"
#endif

void main() {
  uint i = global_index();
  if (i >= p.count) return;
  uint r = i / p.inner, k = i % p.inner;
  const uint to = p.base[0] + r * p.dst_stride + k, from_at = p.base[1] + r * p.src_stride + k;
#ifdef KILN_16BIT
  copy_element(to, from_at);
#else
  dst[to] = src[from_at];
#endif
}
