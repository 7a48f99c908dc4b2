#version 450
// One workgroup per row of logits [N, V]. GRAD = false: loss_r =
// logsumexp(row) - row[target] into out (a scratch vector, summed by
// colsum). GRAD = true: dlogits = dloss / N * (softmax(row) - onehot).
// A target outside [0, V) sets the error flag to this check's index.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "io.glsl"

layout(constant_id = 1) const bool GRAD = false;

KILN_BUFFER(0, outv)
KILN_BUFFER(1, x)
layout(std430, set = 0, binding = 2) buffer Targets { int targets[]; };
KILN_BUFFER(3, dloss)
layout(std430, set = 0, binding = 4) buffer Flag { int flag; };

layout(push_constant) uniform Push {
  uint base[5];
  uint rows, cols;
  float inv_n;  // 1 / N of the whole batch
  int check;
} p;

void main() {
  uint r = flat_group();
  if (r >= p.rows) return;
  uint t = gl_LocalInvocationID.x, n = gl_WorkGroupSize.x;
  uint row = r * p.cols;
  int target = targets[p.base[2] + r];
  if (target < 0 || uint(target) >= p.cols) {
    if (t == 0) atomicMin(flag, p.check);
    return;
  }
  float m = -1.0 / 0.0;
  for (uint j = t; j < p.cols; j += n) m = max(m, x_ld(p.base[1] + row + j));
  m = group_max(m);
  float s = 0.0;
  for (uint j = t; j < p.cols; j += n) s += exp(x_ld(p.base[1] + row + j) - m);
  float lse = m + log(group_sum(s));
  if (!GRAD) {
    if (t == 0) outv_st(p.base[0] + r, lse - x_ld(p.base[1] + row + uint(target)));
    return;
  }
  float k = dloss_ld(p.base[3]) * p.inv_n;
  for (uint j = t; j < p.cols; j += n)
    outv_st(p.base[0] + row + j, k * (exp(x_ld(p.base[1] + row + j) - lse) - (j == uint(target) ? 1.0 : 0.0)));
}
