// Shared by every kiln compute shader. Conventions (backends/vulkan/
// lowering.cpp relies on them):
//  - specialization constant 0 is the workgroup size (x);
//  - descriptor set 0 holds up to 8 storage buffers, one per operand; each
//    is a window of a kiln buffer, bound at an offset aligned to the device's
//    minStorageBufferOffsetAlignment, so the push constants start with one
//    element offset per binding (base[i]) that execute fills in;
//  - 1-D kernels run on a 2-D grid of workgroups (x up to 65535) so counts
//    beyond 65535 workgroups still fit: flat_group() undoes that.
layout(local_size_x_id = 0) in;

uint flat_group() { return gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x; }
uint global_index() { return flat_group() * gl_WorkGroupSize.x + gl_LocalInvocationID.x; }

// tanh without overflow for large |u| (exp(2u) would be inf/inf = NaN).
float stable_tanh(float u) {
  float t = exp(-2.0 * abs(u));
  float r = (1.0 - t) / (1.0 + t);
  return u < 0.0 ? -r : r;
}

// Tree reductions over one workgroup (gl_WorkGroupSize.x a power of two,
// at most 256). Every invocation must call them; all get the result.
shared float red_[256];

float group_sum(float v) {
  uint t = gl_LocalInvocationID.x;
  barrier();
  red_[t] = v;
  barrier();
  for (uint s = gl_WorkGroupSize.x / 2; s > 0; s >>= 1) {
    if (t < s) red_[t] += red_[t + s];
    barrier();
  }
  return red_[0];
}

float group_max(float v) {
  uint t = gl_LocalInvocationID.x;
  barrier();
  red_[t] = v;
  barrier();
  for (uint s = gl_WorkGroupSize.x / 2; s > 0; s >>= 1) {
    if (t < s) red_[t] = max(red_[t], red_[t + s]);
    barrier();
  }
  return red_[0];
}
