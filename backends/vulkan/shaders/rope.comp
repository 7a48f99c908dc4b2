#version 450
// ROPE (GRAD = false) and ROPE_GRAD (GRAD = true) over rows of x [rows, D]:
// one invocation per element. Element j < 2R belongs to pair i with a
// partner, (x[i], x[i + R]) or interleaved (x[2i], x[2i + 1]); the first of
// a pair becomes a c - b s and the second b c + a s, with c and s the
// entries of the row's position in the tables (s negated for the gradient,
// the inverse rotation). Features past 2R are copied. pos0 is the position
// of the chunk's first row.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "io.glsl"

layout(constant_id = 1) const bool INTERLEAVED = false;
layout(constant_id = 2) const bool GRAD = false;

KILN_BUFFER(0, y)
KILN_BUFFER(1, x)
KILN_BUFFER(2, cos_table)
KILN_BUFFER(3, sin_table)

layout(push_constant) uniform Push {
  uint base[4];
  uint count, cols, positions, pairs, pos0;
} p;

void main() {
  uint g = global_index();
  if (g >= p.count) return;
  uint r = g / p.cols, j = g % p.cols;
  if (j >= 2u * p.pairs) {
    y_st(p.base[0] + g, x_ld(p.base[1] + g));
    return;
  }
  bool first;
  uint i, partner;
  if (INTERLEAVED) {
    first = (j & 1u) == 0u;
    i = j / 2u;
    partner = first ? g + 1u : g - 1u;
  } else {
    first = j < p.pairs;
    i = first ? j : j - p.pairs;
    partner = first ? g + p.pairs : g - p.pairs;
  }
  uint at = ((p.pos0 + r) % p.positions) * p.pairs + i;
  float c = cos_table_ld(p.base[2] + at), s = sin_table_ld(p.base[3] + at);
  if (GRAD) s = -s;
  float a = x_ld(p.base[1] + g), b = x_ld(p.base[1] + partner);
  y_st(p.base[0] + g, first ? a * c - b * s : a * c + b * s);
}
