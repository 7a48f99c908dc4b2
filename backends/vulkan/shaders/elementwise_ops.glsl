// The ops of elementwise.comp, as one function that it and fused.comp's
// chains (lowering.cpp) share: r = op(x, b) in f32, where b is the second
// operand's element for the ops that read one (op_reads_b), and f and f2
// the op's float attributes (FILL's value, SCALE's factor, CLAMP's bounds).
// With `op` a specialization constant the compiler keeps only its branch.
// Every op has a branch that names it; a code without one gives NaN, never
// another op's result.

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

// Whether `op` reads a second operand.
bool op_reads_b(int op) {
  return op == KILN_OP_ADD || op == KILN_OP_MUL || op == KILN_OP_MAXIMUM || op == KILN_OP_GELU_GRAD ||
         op == KILN_OP_SILU_GRAD || op == KILN_OP_GELU_ERF_GRAD || op == KILN_OP_CLAMP_GRAD;
}

float elementwise_op(int op, float x, float b, float f, float f2) {
  if (op == KILN_OP_FILL) return f;
  if (op == KILN_OP_ADD) return x + b;
  if (op == KILN_OP_MUL) return x * b;
  if (op == KILN_OP_SCALE) return x * f;
  if (op == KILN_OP_GELU) return 0.5 * x * (1.0 + stable_tanh(kSqrt2OverPi * (x + 0.044715 * x * x * x)));
  if (op == KILN_OP_GELU_GRAD) {
    float t = stable_tanh(kSqrt2OverPi * (x + 0.044715 * x * x * x));
    float du = kSqrt2OverPi * (1.0 + 3.0 * 0.044715 * x * x);
    return b * (0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * du);
  }
  if (op == KILN_OP_SILU || op == KILN_OP_SILU_GRAD) {
    // sigmoid(x) and 1 - sigmoid(x) around exp(-|x|), which never
    // overflows; at x = -inf, x * s = -inf * 0 = NaN as the formula gives.
    float e = exp(-abs(x));
    float s = (x >= 0.0 ? 1.0 : e) / (1.0 + e);
    if (op == KILN_OP_SILU) return x * s;
    float t = (x >= 0.0 ? e : 1.0) / (1.0 + e);
    return b * (s * (1.0 + x * t));
  }
  if (op == KILN_OP_GELU_ERF || op == KILN_OP_GELU_ERF_GRAD) {
    // The normal CDF as 0.5 erfc(-x / sqrt 2): no cancellation at negative x.
    float cdf = 0.5 * erfc_nr(-x * kInvSqrt2);
    if (op == KILN_OP_GELU_ERF) return x * cdf;
    return b * (cdf + x * kInvSqrt2Pi * exp(-0.5 * x * x));
  }
  // A NaN x stays NaN. Tested on its bits: NVIDIA's compiler turns
  // comparison chains into min/max, which return the bound for NaN.
  if (op == KILN_OP_CLAMP) return is_nan(x) ? x : (x < f ? f : (x > f2 ? f2 : x));
  // Inclusive bounds; a NaN x fails both and gets 0.
  if (op == KILN_OP_CLAMP_GRAD) return x >= f && x <= f2 ? b : 0.0;
  if (op == KILN_OP_EXP) return exp(x);
  if (op == KILN_OP_LOG) return log(x);
  if (op == KILN_OP_TANH) return tanh_op(x);
  if (op == KILN_OP_ERF) return erf_nr(x);
  // A NaN in either gives NaN; a tie gives x. Tested on bits, as CLAMP.
  if (op == KILN_OP_MAXIMUM) return is_nan(x) || is_nan(b) ? uintBitsToFloat(0x7FC00000u) : (x < b ? b : x);
  return uintBitsToFloat(0x7FC00000u);  // an op without a branch: NaN, which conformance fails
}
