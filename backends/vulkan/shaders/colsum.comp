#version 450
// Column sums, one invocation per column, rows in order (deterministic):
//   MODE 0: y[c] (+)= scale * sum_r x[r, c]                 (SUM_TO, dbeta, loss mean, partial sums)
//   MODE 1: y[c] (+)= sum_r dy[r, c] * (x[r, c] - mean_r) * rstd_r   (LAYERNORM_GRAD dgamma)
// accumulate = 1 adds to y (a later chunk of rows).
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(constant_id = 1) const int MODE = 0;

layout(std430, set = 0, binding = 0) buffer Y { float y[]; };
layout(std430, set = 0, binding = 1) buffer X { float x[]; };    // MODE 0: x; MODE 1: dy
layout(std430, set = 0, binding = 2) buffer X2 { float x2[]; };  // MODE 1: x
layout(std430, set = 0, binding = 3) buffer Stats { float stats[]; };

layout(push_constant) uniform Push {
  uint base[4];
  uint rows, cols;
  float scale;
  uint accumulate;
} p;

void main() {
  uint c = global_index();
  if (c >= p.cols) return;
  float s = 0.0;
  for (uint r = 0; r < p.rows; ++r) {
    uint at = r * p.cols + c;
    if (MODE == 0)
      s += x[p.base[1] + at];
    else
      s += x[p.base[1] + at] * ((x2[p.base[2] + at] - stats[p.base[3] + 2 * r]) * stats[p.base[3] + 2 * r + 1]);
  }
  s *= p.scale;
  y[p.base[0] + c] = p.accumulate != 0 ? y[p.base[0] + c] + s : s;
}
