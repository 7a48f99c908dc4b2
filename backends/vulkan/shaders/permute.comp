#version 450
// PERMUTE as a gather: output element i (row-major over dims[]) reads the
// input at sum(index_d * strides[d]). Dims and strides come from the host's
// merged plan (size-1 dims dropped, adjacent dims fused), rank <= 6.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(std430, set = 0, binding = 0) buffer Dst { uint dst[]; };
layout(std430, set = 0, binding = 1) buffer Src { uint src[]; };

layout(push_constant) uniform Push {
  uint base[2];
  uint count;
  uint rank;
  uint dims[6];
  uint strides[6];
} p;

void main() {
  uint i = global_index();
  if (i >= p.count) return;
  uint rest = i, from = 0;
  for (int d = int(p.rank) - 1; d >= 0; --d) {
    uint idx = rest % p.dims[d];
    rest /= p.dims[d];
    from += idx * p.strides[d];
  }
  dst[p.base[0] + i] = src[p.base[1] + from];
}
