#version 450
// ADAMW (kiln/ir.h), elementwise; outputs may alias inputs (in place).
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(constant_id = 1) const bool WEIGHT_DECAY = false;

layout(std430, set = 0, binding = 0) buffer P { float param[]; };
layout(std430, set = 0, binding = 1) buffer G { float grad[]; };
layout(std430, set = 0, binding = 2) buffer M { float m[]; };
layout(std430, set = 0, binding = 3) buffer V { float v[]; };
layout(std430, set = 0, binding = 4) buffer H { float hp[]; };  // lr, wd, c1, c2, grad_scale
layout(std430, set = 0, binding = 5) buffer P2 { float param2[]; };
layout(std430, set = 0, binding = 6) buffer M2 { float m2[]; };
layout(std430, set = 0, binding = 7) buffer V2 { float v2[]; };

layout(push_constant) uniform Push {
  uint base[8];
  uint count;
  float beta1, beta2, eps;
} p;

void main() {
  uint i = global_index();
  if (i >= p.count) return;
  float lr = hp[p.base[4]], wd = hp[p.base[4] + 1], c1 = hp[p.base[4] + 2], c2 = hp[p.base[4] + 3];
  float gs = hp[p.base[4] + 4];
  float pk = param[p.base[0] + i];
  float g = grad[p.base[1] + i] * gs;
  float mk = p.beta1 * m[p.base[2] + i] + (1.0 - p.beta1) * g;
  float vk = p.beta2 * v[p.base[3] + i] + (1.0 - p.beta2) * g * g;
  float update = mk * c1 / (sqrt(vk * c2) + p.eps);
  if (WEIGHT_DECAY) update += wd * pk;
  param2[p.base[5] + i] = pk - lr * update;
  m2[p.base[6] + i] = mk;
  v2[p.base[7] + i] = vk;
}
