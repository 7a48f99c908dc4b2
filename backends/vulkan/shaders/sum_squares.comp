#version 450
// First pass of SUM_SQUARES: workgroup g sums x^2 over elements g, g +
// groups, ... (strided by invocations) into partial[g]; colsum adds the
// partials in order, so the result does not depend on timing.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "io.glsl"

KILN_BUFFER(0, partial)
KILN_BUFFER(1, x)

layout(push_constant) uniform Push {
  uint base[2];
  uint count;
} p;

void main() {
  uint g = gl_WorkGroupID.x, groups = gl_NumWorkGroups.x, n = gl_WorkGroupSize.x;
  float s = 0.0;
  for (uint i = g * n + gl_LocalInvocationID.x; i < p.count; i += groups * n) {
    float v = x_ld(p.base[1] + i);
    s += v * v;
  }
  s = group_sum(s);
  if (gl_LocalInvocationID.x == 0) partial_st(p.base[0] + g, s);
}
