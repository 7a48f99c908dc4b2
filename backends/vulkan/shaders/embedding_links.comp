#version 450
// EMBEDDING_GRAD's first pass (embedding_grad.comp is the second): for each
// position i, the next position with the same id (links[i]'s low 31 bits,
// kNone where there is none) and whether an earlier position has it (bit
// 31). The gradient then sums each id's rows by walking that chain from its
// first occurrence, in position order, so that its work is rows * cols
// loads, not a scan of every id for every element (28 ms of an H100's
// 124M step, issue 33). This pass scans the ids once per position: rows
// invocations, no atomics, the same links every run.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(std430, set = 0, binding = 0) buffer Links { uint links[]; };
layout(std430, set = 0, binding = 1) buffer Ids { int ids[]; };

layout(push_constant) uniform Push {
  uint base[2];
  uint rows;
} p;

const uint kNone = 0x7FFFFFFFu, kLater = 0x80000000u;

void main() {
  uint i = global_index();
  if (i >= p.rows) return;
  int id = ids[p.base[1] + i];
  uint next = kNone;
  for (uint j = i + 1; j < p.rows; ++j)
    if (ids[p.base[1] + j] == id) {
      next = j;
      break;
    }
  uint later = 0u;
  for (uint j = 0; j < i; ++j)
    if (ids[p.base[1] + j] == id) {
      later = kLater;
      break;
    }
  links[p.base[0] + i] = next | later;
}
