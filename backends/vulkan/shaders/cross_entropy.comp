#version 450
// One workgroup per row of logits [N, V]. GRAD = false: loss_r =
// logsumexp(row) - row[target] into out (a scratch vector, summed by
// colsum). GRAD = true: dlogits = dloss / N * (softmax(row) - onehot).
// A target outside [0, V) sets the error flag to this check's index.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(constant_id = 1) const bool GRAD = false;

layout(std430, set = 0, binding = 0) buffer Out { float outv[]; };
layout(std430, set = 0, binding = 1) buffer Logits { float x[]; };
layout(std430, set = 0, binding = 2) buffer Targets { int targets[]; };
layout(std430, set = 0, binding = 3) buffer Dloss { float dloss[]; };
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
  for (uint j = t; j < p.cols; j += n) m = max(m, x[p.base[1] + row + j]);
  m = group_max(m);
  float s = 0.0;
  for (uint j = t; j < p.cols; j += n) s += exp(x[p.base[1] + row + j] - m);
  float lse = m + log(group_sum(s));
  if (!GRAD) {
    if (t == 0) outv[p.base[0] + r] = lse - x[p.base[1] + row + uint(target)];
    return;
  }
  float k = dloss[p.base[3]] * p.inv_n;
  for (uint j = t; j < p.cols; j += n)
    outv[p.base[0] + row + j] = k * (exp(x[p.base[1] + row + j] - lse) - (j == uint(target) ? 1.0 : 0.0));
}
