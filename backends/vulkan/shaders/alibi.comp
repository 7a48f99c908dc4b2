#version 450
// ALIBI (kiln/ops.h): y[..., h, i, j] = x[..., h, i, j] + slopes[h] * (j - i)
// over rows of t keys. A dispatch covers whole rows; row0 is its first row's
// index within one [H, T, T] block, so h and i follow from the row.
// `precise` keeps the bias rounded to f32 before the add (no fused
// multiply-add), as the op defines and the other backends compute.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "io.glsl"

KILN_BUFFER(0, y)
KILN_BUFFER(1, x)
KILN_BUFFER(2, slopes)

layout(push_constant) uniform Push {
  uint base[3];
  uint count;  // rows * t
  uint t;
  uint heads;
  uint row0;
} p;

void main() {
  uint e = global_index();
  if (e >= p.count) return;
  uint row = p.row0 + e / p.t;
  uint j = e % p.t, i = row % p.t, h = (row / p.t) % p.heads;
  precise float bias = slopes_ld(p.base[2] + h) * float(int(j) - int(i));
  precise float r = x_ld(p.base[1] + e) + bias;
  y_st(p.base[0] + e, r);
}
