#version 450
// PERMUTE as a gather: output element i (row-major over dims[]) reads the
// input at sum(index_d * strides[d]). Dims and strides come from the host's
// merged plan (size-1 dims dropped, adjacent dims fused), rank <= 6.
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
  uint count;
  uint rank;
  uint dims[6];
  uint strides[6];
} p;

#ifdef KILN_16BIT
#include "copy16.glsl"
#endif

void main() {
  uint i = global_index();
  if (i >= p.count) return;
  uint rest = i, from = 0;
  for (int d = int(p.rank) - 1; d >= 0; --d) {
    uint idx = rest % p.dims[d];
    rest /= p.dims[d];
    from += idx * p.strides[d];
  }
  const uint to = p.base[0] + i, from_at = p.base[1] + from;
#ifdef KILN_16BIT
  copy_element(to, from_at);
#else
  dst[to] = src[from_at];
#endif
}
