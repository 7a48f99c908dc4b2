#version 450
// EMBEDDING: y[i, c] = table[ids[i], c], one invocation per element of y.
// The table may be bound in bands of vocabulary rows [v0, v0 + vrows):
// each dispatch writes the rows whose id falls in its band. An id outside
// [0, vocab) sets the error flag (checked by the first band).
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "io.glsl"

KILN_BUFFER(0, y)
KILN_BUFFER(1, table)
layout(std430, set = 0, binding = 2) buffer Ids { int ids[]; };
layout(std430, set = 0, binding = 3) buffer Flag { int flag; };

layout(push_constant) uniform Push {
  uint base[4];
  uint count, cols, vocab, v0, vrows;
  int check;  // -1: not the checking band
} p;

void main() {
  uint e = global_index();
  if (e >= p.count) return;
  uint i = e / p.cols, c = e % p.cols;
  int id = ids[p.base[2] + i];
  if (id < 0 || uint(id) >= p.vocab) {
    if (p.check >= 0 && c == 0) atomicMin(flag, p.check);
    return;
  }
  uint v = uint(id);
  if (v < p.v0 || v >= p.v0 + p.vrows) return;
  y_st(p.base[0] + e, table_ld(p.base[1] + (v - p.v0) * p.cols + c));
}
