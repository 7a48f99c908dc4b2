#version 450
// EMBEDDING_GRAD after dtable is zero-filled and embedding_links.comp has
// linked each position to the next one with its id: for each (i, c) where
// i is the first occurrence of its id, dtable[id, c] = sum of dy[j, c] over
// that id's positions j, in order of j. No atomics, no races: every row of
// dtable has exactly one writer, and the sum order is fixed.
// dtable may be bound in bands of vocabulary rows, as in embedding.comp.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "io.glsl"

KILN_BUFFER(0, dtable)
KILN_BUFFER(1, dy)
layout(std430, set = 0, binding = 2) buffer Ids { int ids[]; };
layout(std430, set = 0, binding = 3) buffer Flag { int flag; };
layout(std430, set = 0, binding = 4) buffer Links { uint links[]; };

layout(push_constant) uniform Push {
  uint base[5];
  uint count, cols, vocab, v0, vrows, rows;
  int check;
} p;

const uint kNone = 0x7FFFFFFFu, kLater = 0x80000000u;  // as embedding_links.comp

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
  if ((links[p.base[4] + i] & kLater) != 0u) return;  // its first occurrence sums it
  float s = 0.0;
  uint j = i;
  while (true) {
    s += dy_ld(p.base[1] + j * p.cols + c);
    uint next = links[p.base[4] + j] & kNone;
    if (next == kNone) break;
    j = next;  // always later than j: the walk ends
  }
  dtable_st(p.base[0] + (v - p.v0) * p.cols + c, s);
}
