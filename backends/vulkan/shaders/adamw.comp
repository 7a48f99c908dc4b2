#version 450
// ADAMW (kiln/ir.h), elementwise; outputs may alias inputs (in place).
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "io.glsl"

layout(constant_id = 1) const bool WEIGHT_DECAY = false;

KILN_BUFFER(0, param)
KILN_BUFFER(1, grad)
KILN_BUFFER(2, m)
KILN_BUFFER(3, v)
KILN_BUFFER(4, hp)  // lr, wd, c1, c2, grad_scale
KILN_BUFFER(5, param2)
KILN_BUFFER(6, m2)
KILN_BUFFER(7, v2)

layout(push_constant) uniform Push {
  uint base[8];
  uint count;
  float beta1, beta2, eps;
} p;

void main() {
  uint i = global_index();
  if (i >= p.count) return;
  float lr = hp_ld(p.base[4]), wd = hp_ld(p.base[4] + 1), c1 = hp_ld(p.base[4] + 2), c2 = hp_ld(p.base[4] + 3);
  float gs = hp_ld(p.base[4] + 4);
  float pk = param_ld(p.base[0] + i);
  float g = grad_ld(p.base[1] + i) * gs;
  float mk = p.beta1 * m_ld(p.base[2] + i) + (1.0 - p.beta1) * g;
  float vk = p.beta2 * v_ld(p.base[3] + i) + (1.0 - p.beta2) * g * g;
  float update = mk * c1 / (sqrt(vk * c2) + p.eps);
  if (WEIGHT_DECAY) update += wd * pk;
  param2_st(p.base[5] + i, pk - lr * update);
  m2_st(p.base[6] + i, mk);
  v2_st(p.base[7] + i, vk);
}
