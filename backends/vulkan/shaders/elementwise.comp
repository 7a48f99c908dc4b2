#version 450
// FILL, ADD, MUL, SCALE, GELU, GELU_GRAD (kiln/ir.h), chosen by OP.
// In place safe: element i of every input is read before y[i] is written.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

layout(constant_id = 1) const int OP = 0;  // 0 fill 1 add 2 mul 3 scale 4 gelu 5 gelu_grad

layout(std430, set = 0, binding = 0) buffer Y { float y[]; };
layout(std430, set = 0, binding = 1) buffer A { float a[]; };
layout(std430, set = 0, binding = 2) buffer B { float b[]; };

layout(push_constant) uniform Push {
  uint base[3];
  uint count;
  uint bcast;  // elements of b, repeated over a (a suffix of its shape)
  float f;     // FILL value, SCALE factor
} p;

const float kSqrt2OverPi = 0.7978845608028654;

void main() {
  uint i = global_index();
  if (i >= p.count) return;
  float r;
  if (OP == 0) {
    r = p.f;
  } else {
    float x = a[p.base[1] + i];
    if (OP == 1) {
      r = x + b[p.base[2] + i % p.bcast];
    } else if (OP == 2) {
      r = x * b[p.base[2] + i % p.bcast];
    } else if (OP == 3) {
      r = x * p.f;
    } else if (OP == 4) {
      r = 0.5 * x * (1.0 + stable_tanh(kSqrt2OverPi * (x + 0.044715 * x * x * x)));
    } else {
      float t = stable_tanh(kSqrt2OverPi * (x + 0.044715 * x * x * x));
      float du = kSqrt2OverPi * (1.0 + 3.0 * 0.044715 * x * x);
      r = b[p.base[2] + i] * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * du);
    }
  }
  y[p.base[0] + i] = r;
}
