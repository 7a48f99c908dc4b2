#version 450
// CAUSAL_SOFTMAX (GRAD = false): row i of each [T, T] matrix is the softmax
// of scale * x[i, j] over j <= i, and 0 for j > i. SOFTMAX_GRAD (GRAD =
// true): dx = scale * y * (dy - sum_j dy * y) over the whole row.
// One workgroup per row; row0 is the chunk's first global row.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(constant_id = 1) const bool GRAD = false;

layout(std430, set = 0, binding = 0) buffer Out { float outv[]; };
layout(std430, set = 0, binding = 1) buffer In { float inv[]; };  // x, or y
layout(std430, set = 0, binding = 2) buffer Dy { float dy[]; };

layout(push_constant) uniform Push {
  uint base[3];
  uint rows, cols, row0;
  float scale;
} p;

void main() {
  uint r = flat_group();
  if (r >= p.rows) return;
  uint t = gl_LocalInvocationID.x, n = gl_WorkGroupSize.x;
  uint row = r * p.cols;
  if (GRAD) {
    float d = 0.0;
    for (uint j = t; j < p.cols; j += n) d += dy[p.base[2] + row + j] * inv[p.base[1] + row + j];
    float dot = group_sum(d);
    for (uint j = t; j < p.cols; j += n)
      outv[p.base[0] + row + j] = p.scale * inv[p.base[1] + row + j] * (dy[p.base[2] + row + j] - dot);
    return;
  }
  uint last = (p.row0 + r) % p.cols;  // the row's index i inside its matrix
  float m = -1.0 / 0.0;
  for (uint j = t; j <= last; j += n) m = max(m, p.scale * inv[p.base[1] + row + j]);
  m = group_max(m);
  float s = 0.0;
  for (uint j = t; j <= last; j += n) s += exp(p.scale * inv[p.base[1] + row + j] - m);
  s = group_sum(s);
  for (uint j = t; j < p.cols; j += n)
    outv[p.base[0] + row + j] = j <= last ? exp(p.scale * inv[p.base[1] + row + j] - m) / s : 0.0;
}
