#version 450
// CAUSAL_SOFTMAX (GRAD = false): row i of each [T, T] matrix is the softmax
// of scale * x[i, j] over j <= i, and 0 for j > i; DOCUMENT_SOFTMAX (DOCS =
// true) also masks j below the row's document start, starts[sample, i]
// clamped to [0, i]. SOFTMAX_GRAD (GRAD = true): dx = scale * y * (dy -
// sum_j dy * y) over the whole row.
// One workgroup per row; row0 is the chunk's first global row mod T, and
// its sample is sample0 + (offset0 + r) / rps (rps rows to a sample).
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "io.glsl"

layout(constant_id = 1) const bool GRAD = false;
layout(constant_id = 2) const bool DOCS = false;

KILN_BUFFER(0, outv)
KILN_BUFFER(1, inv)  // x, or y
KILN_BUFFER(2, dy)
layout(std430, set = 0, binding = 3) buffer Starts { int starts[]; };

layout(push_constant) uniform Push {
  uint base[4];
  uint rows, cols, row0;
  float scale;
  uint rps, sample0, offset0;
} p;

void main() {
  uint r = flat_group();
  if (r >= p.rows) return;
  uint t = gl_LocalInvocationID.x, n = gl_WorkGroupSize.x;
  uint row = r * p.cols;
  if (GRAD) {
    float d = 0.0;
    for (uint j = t; j < p.cols; j += n) d += dy_ld(p.base[2] + row + j) * inv_ld(p.base[1] + row + j);
    float dot = group_sum(d);
    for (uint j = t; j < p.cols; j += n)
      outv_st(p.base[0] + row + j, p.scale * inv_ld(p.base[1] + row + j) * (dy_ld(p.base[2] + row + j) - dot));
    return;
  }
  uint last = (p.row0 + r) % p.cols;  // the row's index i inside its matrix
  uint first = 0u;
  if (DOCS) {
    uint b = p.sample0 + (p.offset0 + r) / p.rps;  // the row's sample
    int s = starts[p.base[3] + b * p.cols + last];
    first = s < 0 ? 0u : min(uint(s), last);
  }
  float m = -1.0 / 0.0;
  for (uint j = first + t; j <= last; j += n) m = max(m, p.scale * inv_ld(p.base[1] + row + j));
  m = group_max(m);
  float s = 0.0;
  for (uint j = first + t; j <= last; j += n) s += exp(p.scale * inv_ld(p.base[1] + row + j) - m);
  s = group_sum(s);
  for (uint j = t; j < p.cols; j += n)
    outv_st(p.base[0] + row + j, j >= first && j <= last ? exp(p.scale * inv_ld(p.base[1] + row + j) - m) / s : 0.0);
}
