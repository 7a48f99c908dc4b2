#version 450
// LAYERNORM (GRAD = false): one workgroup per row, y = (x - mean) * rstd *
// gamma + beta with the biased variance. LAYERNORM_GRAD (GRAD = true): dx,
// and each row's mean and rstd into stats (for the dgamma column sums).
// RMS = true makes the same shader RMSNORM(_GRAD): the mean is taken as 0
// and there is no beta, so y = x * rstd * gamma with rstd from mean(x^2),
// and dx = rstd * (g - xhat * mean(g xhat)); stats hold (0, rstd), which the
// dgamma column sum then uses unchanged.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "io.glsl"

layout(constant_id = 1) const bool GRAD = false;
layout(constant_id = 2) const bool RMS = false;

KILN_BUFFER(0, outv)    // y or dx
KILN_BUFFER(1, x)
KILN_BUFFER(2, gamma)
KILN_BUFFER(3, bd)   // beta (unused if RMS) or dy
KILN_BUFFER(4, stats) // GRAD: [rows][2]

layout(push_constant) uniform Push {
  uint base[5];
  uint rows, cols;
  float eps;
} p;

void main() {
  uint r = flat_group();
  if (r >= p.rows) return;  // whole workgroups leave together
  uint t = gl_LocalInvocationID.x, n = gl_WorkGroupSize.x;
  uint row = r * p.cols;
  // Means multiply by 1/cols: a multiplication is correctly rounded, while
  // Vulkan lets a division be off by 2.5 ulp (NVIDIA's is), and a one-column
  // row must give x - mean = 0 exactly.
  const float inv_cols = 1.0 / float(p.cols);
  float mean = 0.0;
  if (!RMS) {  // a specialization constant: the whole workgroup agrees
    float s = 0.0;
    for (uint j = t; j < p.cols; j += n) s += x_ld(p.base[1] + row + j);
    mean = group_sum(s) * inv_cols;
  }
  float v = 0.0;
  for (uint j = t; j < p.cols; j += n) {
    float d = x_ld(p.base[1] + row + j) - mean;
    v += d * d;
  }
  float rstd = 1.0 / sqrt(group_sum(v) * inv_cols + p.eps);
  if (!GRAD) {
    for (uint j = t; j < p.cols; j += n)
      outv_st(p.base[0] + row + j,
              (x_ld(p.base[1] + row + j) - mean) * rstd * gamma_ld(p.base[2] + j) + (RMS ? 0.0 : bd_ld(p.base[3] + j)));
    return;
  }
  float sg = 0.0, sgx = 0.0;
  for (uint j = t; j < p.cols; j += n) {
    float xh = (x_ld(p.base[1] + row + j) - mean) * rstd;
    // precise: no fused multiply-add may absorb this product, so both loops
    // see the same rounded g and a one-column row gives g - mean_g = 0.
    precise float g = bd_ld(p.base[3] + row + j) * gamma_ld(p.base[2] + j);
    sg += g;
    sgx += g * xh;
  }
  float mean_g = RMS ? 0.0 : group_sum(sg) * inv_cols;
  float mean_gx = group_sum(sgx) * inv_cols;
  for (uint j = t; j < p.cols; j += n) {
    float xh = (x_ld(p.base[1] + row + j) - mean) * rstd;
    precise float g = bd_ld(p.base[3] + row + j) * gamma_ld(p.base[2] + j);
    outv_st(p.base[0] + row + j, rstd * (g - mean_g - xh * mean_gx));
  }
  if (t == 0) {
    stats_st(p.base[4] + 2 * r, mean);
    stats_st(p.base[4] + 2 * r + 1, rstd);
  }
}
