#version 450
// Column sums. Each workgroup owns 16 adjacent columns; its invocations
// split into gl_WorkGroupSize.x / 16 row lanes, lane l summing rows l,
// l + lanes, ... in order, and the lanes' partial sums are then added in
// lane order: deterministic for a given shape and workgroup size, and with
// enough workgroups in flight to keep a GPU's memory busy (one invocation
// per column left an H100 waiting on 768 threads for 0.7 ms per call).
//   MODE 0: y[c] (+)= scale * sum_r x[r, c]                 (SUM_TO, dbeta, loss mean, partial sums)
//   MODE 1: y[c] (+)= sum_r dy[r, c] * (x[r, c] - mean_r) * rstd_r   (LAYERNORM_GRAD dgamma)
// accumulate = 1 adds to y (a later chunk of rows).
// Where columns are few and rows many (a bias gradient: 768 columns of 8192
// rows is 48 workgroups), lowering.cpp splits the rows into parts of
// part_rows, one per workgroup z: part z writes its sums to y's row z, and
// a second colsum adds the parts in order.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "io.glsl"

layout(constant_id = 1) const int MODE = 0;

KILN_BUFFER(0, y)
KILN_BUFFER(1, x)    // MODE 0: x; MODE 1: dy
KILN_BUFFER(2, x2)  // MODE 1: x
KILN_BUFFER(3, stats)

layout(push_constant) uniform Push {
  uint base[4];
  uint rows, cols;
  float scale;
  uint accumulate, part_rows;
} p;

const uint COLS = 16;  // columns per workgroup (lowering.cpp sizes the grid by it)
shared float partial_[256];

void main() {
  const uint t = gl_LocalInvocationID.x, lanes = gl_WorkGroupSize.x / COLS;
  const uint c = flat_group() * COLS + t % COLS, lane = t / COLS;
  const uint r0 = gl_WorkGroupID.z * p.part_rows, r1 = min(p.rows, r0 + p.part_rows);
  float s = 0.0;
  if (c < p.cols) {
    for (uint r = r0 + lane; r < r1; r += lanes) {
      uint at = r * p.cols + c;
      if (MODE == 0)
        s += x_ld(p.base[1] + at);
      else
        s += x_ld(p.base[1] + at) *
             ((x2_ld(p.base[2] + at) - stats_ld(p.base[3] + 2 * r)) * stats_ld(p.base[3] + 2 * r + 1));
    }
  }
  partial_[t] = s;
  barrier();
  if (lane != 0 || c >= p.cols) return;
  for (uint l = 1; l < lanes; ++l) s += partial_[l * COLS + t];
  s *= p.scale;
  const uint at = p.base[0] + gl_WorkGroupID.z * p.cols + c;
  y_st(at, p.accumulate != 0 ? y_ld(at) + s : s);
}
