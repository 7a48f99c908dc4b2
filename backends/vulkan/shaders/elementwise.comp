#version 450
// FILL, ADD, MUL, SCALE, GELU, GELU_GRAD, SILU, SILU_GRAD, CLAMP, CLAMP_GRAD
// (kiln/ops.h), chosen by OP.
// In place safe: element i of every input is read before y[i] is written.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"

// 0 fill 1 add 2 mul 3 scale 4 gelu 5 gelu_grad 6 silu 7 silu_grad 8 clamp 9 clamp_grad
layout(constant_id = 1) const int OP = 0;

layout(std430, set = 0, binding = 0) buffer Y { float y[]; };
layout(std430, set = 0, binding = 1) buffer A { float a[]; };
layout(std430, set = 0, binding = 2) buffer B { float b[]; };

layout(push_constant) uniform Push {
  uint base[3];
  uint count;
  uint bcast;  // elements of b, repeated over a (a suffix of its shape)
  float f;     // FILL value, SCALE factor, CLAMP's lower bound
  float f2;    // CLAMP's upper bound (pushed for CLAMP only)
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
    } else if (OP == 5) {
      float t = stable_tanh(kSqrt2OverPi * (x + 0.044715 * x * x * x));
      float du = kSqrt2OverPi * (1.0 + 3.0 * 0.044715 * x * x);
      r = b[p.base[2] + i] * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * du);
    } else if (OP == 6 || OP == 7) {
      // sigmoid(x) and 1 - sigmoid(x) around exp(-|x|), which never
      // overflows; at x = -inf, x * s = -inf * 0 = NaN as the formula gives.
      float e = exp(-abs(x));
      float s = (x >= 0.0 ? 1.0 : e) / (1.0 + e);
      if (OP == 6) {
        r = x * s;
      } else {
        float t = (x >= 0.0 ? e : 1.0) / (1.0 + e);
        r = b[p.base[2] + i] * (s * (1.0 + x * t));
      }
    } else if (OP == 8) {
      // Comparisons, not min/max or clamp(): a NaN x falls through as NaN.
      r = x < p.f ? p.f : (x > p.f2 ? p.f2 : x);
    } else {
      // Inclusive bounds; a NaN x fails both and gets 0.
      r = x >= p.f && x <= p.f2 ? b[p.base[2] + i] : 0.0;
    }
  }
  y[p.base[0] + i] = r;
}
