#version 450
// FILL, ADD, MUL, SCALE, GELU, GELU_GRAD, SILU, SILU_GRAD, CLAMP, CLAMP_GRAD,
// GELU_ERF, GELU_ERF_GRAD, EXP, LOG, TANH, ERF, MAXIMUM (kiln/ops.h), chosen by OP.
// In place safe: element i of every input is read before y[i] is written.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "io.glsl"
#include "kiln_ops.glsl"

// The node's op code in kiln's op table (kiln_ops.glsl is generated from
// it): no numbering of the shader's own. Every op has a branch that names
// it; a code without one writes NaN, never another op's result.
layout(constant_id = 1) const int OP = KILN_OP_FILL;

KILN_BUFFER(0, y)
KILN_BUFFER(1, a)
KILN_BUFFER(2, b)

layout(push_constant) uniform Push {
  uint base[3];
  uint count;
  uint bcast;  // elements of b, repeated over a (a suffix of its shape)
  float f;     // FILL value, SCALE factor, CLAMP's lower bound
  float f2;    // CLAMP's upper bound (pushed for CLAMP only)
} p;

const float kSqrt2OverPi = 0.7978845608028654;

// GLSL has no erf. erfc(z) for z >= 0 by the Chebyshev fit of Numerical
// Recipes (2nd ed., section 6.2, erfcc): fractional error below 1.2e-7 for
// every z >= 0 (1.04e-7 measured in double over [0, 10]), so GELU's relative
// error stays near float rounding. Abramowitz-Stegun 7.1.26 (absolute error
// 1.5e-7 on erf) passes the 1e-7 NMSE too, but its relative error in erfc's
// tail reaches 100% at z = 10, i.e. GELU of large negative x.
// Negative z uses erfc(z) = 2 - erfc(-z).
float erfc_nr(float z) {
  float a = abs(z);
  float t = 1.0 / (1.0 + 0.5 * a);
  float poly = -1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 +
               t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))));
  float r = t * exp(-a * a + poly);
  return z >= 0.0 ? r : 2.0 - r;
}

// erf(z): below |z| = 0.5 its Taylor series to z^11 (the next term is under
// 2.5e-8 relative), where 1 - erfc would cancel; above, 1 - erfc_nr(|z|)
// with z's sign.
float erf_nr(float z) {
  float a = abs(z);
  if (a < 0.5) {
    float z2 = z * z;
    return 1.1283791670955126 * z *
           (1.0 + z2 * (-1.0 / 3.0 + z2 * (1.0 / 10.0 + z2 * (-1.0 / 42.0 + z2 * (1.0 / 216.0 - z2 / 1320.0)))));
  }
  float r = 1.0 - erfc_nr(a);
  return z < 0.0 ? -r : r;
}

// tanh(u) to float precision near 0 too: common.glsl's stable_tanh forms
// 1 - e^(-2|u|), which loses relative precision as u -> 0 (fine inside
// GELU, not for TANH itself). Below |u| = 0.25 the series to u^11 (next term
// under 1e-11 relative).
float tanh_op(float u) {
  if (abs(u) >= 0.25) return stable_tanh(u);
  float u2 = u * u;
  return u * (1.0 + u2 * (-1.0 / 3.0 + u2 * (2.0 / 15.0 + u2 * (-17.0 / 315.0 + u2 * (62.0 / 2835.0 -
         u2 * (1382.0 / 155925.0))))));
}

bool is_nan(float v) { return (floatBitsToUint(v) & 0x7FFFFFFFu) > 0x7F800000u; }

const float kInvSqrt2 = 0.70710678118654752;
const float kInvSqrt2Pi = 0.39894228040143268;

void main() {
  uint i = global_index();
  if (i >= p.count) return;
  float r;
  if (OP == KILN_OP_FILL) {
    r = p.f;
  } else {
    float x = a_ld(p.base[1] + i);
    if (OP == KILN_OP_ADD) {
      r = x + b_ld(p.base[2] + i % p.bcast);
    } else if (OP == KILN_OP_MUL) {
      r = x * b_ld(p.base[2] + i % p.bcast);
    } else if (OP == KILN_OP_SCALE) {
      r = x * p.f;
    } else if (OP == KILN_OP_GELU) {
      r = 0.5 * x * (1.0 + stable_tanh(kSqrt2OverPi * (x + 0.044715 * x * x * x)));
    } else if (OP == KILN_OP_GELU_GRAD) {
      float t = stable_tanh(kSqrt2OverPi * (x + 0.044715 * x * x * x));
      float du = kSqrt2OverPi * (1.0 + 3.0 * 0.044715 * x * x);
      r = b_ld(p.base[2] + i) * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * du);
    } else if (OP == KILN_OP_SILU || OP == KILN_OP_SILU_GRAD) {
      // sigmoid(x) and 1 - sigmoid(x) around exp(-|x|), which never
      // overflows; at x = -inf, x * s = -inf * 0 = NaN as the formula gives.
      float e = exp(-abs(x));
      float s = (x >= 0.0 ? 1.0 : e) / (1.0 + e);
      if (OP == KILN_OP_SILU) {
        r = x * s;
      } else {
        float t = (x >= 0.0 ? e : 1.0) / (1.0 + e);
        r = b_ld(p.base[2] + i) * (s * (1.0 + x * t));
      }
    } else if (OP == KILN_OP_GELU_ERF || OP == KILN_OP_GELU_ERF_GRAD) {
      // The normal CDF as 0.5 erfc(-x / sqrt 2): no cancellation at negative x.
      float cdf = 0.5 * erfc_nr(-x * kInvSqrt2);
      if (OP == KILN_OP_GELU_ERF) {
        r = x * cdf;
      } else {
        r = b_ld(p.base[2] + i) * (cdf + x * kInvSqrt2Pi * exp(-0.5 * x * x));
      }
    } else if (OP == KILN_OP_CLAMP) {
      // A NaN x stays NaN. Tested on its bits: NVIDIA's compiler turns
      // comparison chains into min/max, which return the bound for NaN.
      r = is_nan(x) ? x : (x < p.f ? p.f : (x > p.f2 ? p.f2 : x));
    } else if (OP == KILN_OP_CLAMP_GRAD) {
      // Inclusive bounds; a NaN x fails both and gets 0.
      r = x >= p.f && x <= p.f2 ? b_ld(p.base[2] + i) : 0.0;
    } else if (OP == KILN_OP_EXP) {
      r = exp(x);
    } else if (OP == KILN_OP_LOG) {
      r = log(x);
    } else if (OP == KILN_OP_TANH) {
      r = tanh_op(x);
    } else if (OP == KILN_OP_ERF) {
      r = erf_nr(x);
    } else if (OP == KILN_OP_MAXIMUM) {
      // A NaN in either gives NaN; a tie gives x. Tested on bits, as CLAMP.
      float m = b_ld(p.base[2] + i % p.bcast);
      r = is_nan(x) || is_nan(m) ? uintBitsToFloat(0x7FC00000u) : (x < m ? m : x);
    } else {
      r = uintBitsToFloat(0x7FC00000u);  // an op without a branch: NaN, which conformance fails
    }
  }
  y_st(p.base[0] + i, r);
}
