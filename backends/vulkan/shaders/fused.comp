#version 450
// A chain of elementwise.comp's ops in one dispatch (lowering.cpp's
// fusion): stage s computes r = OP_s(r, b_s) per element, where r starts as
// binding 1's element and b_s is binding B_s's element for the ops that read
// a second operand (i % period[k] for a broadcast one; a DROPOUT_KEYED
// stage reads its key there whole). Between stages, r is
// rounded to the dtype of the value the unfused kernel would have stored
// (RND: 2 bits per stage, io.glsl's codes), so the chain gives the unfused
// kernels' bits. The last stage's result is stored in binding 0; an
// intermediate something else reads, in binding S_s too.
// In place safe: every element i an invocation reads is read before y[i]
// is written.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "io.glsl"
#include "kiln_ops.glsl"
#include "elementwise_ops.glsl"
#include "philox.glsl"

layout(constant_id = 1) const int STAGES = 1;  // 1 to 4
layout(constant_id = 2) const int OP0 = KILN_OP_FILL;
layout(constant_id = 3) const int OP1 = KILN_OP_FILL;
layout(constant_id = 4) const int OP2 = KILN_OP_FILL;
layout(constant_id = 5) const int OP3 = KILN_OP_FILL;
layout(constant_id = 6) const int B0 = 0;  // the binding of stage s's second operand; 0: none
layout(constant_id = 7) const int B1 = 0;
layout(constant_id = 8) const int B2 = 0;
layout(constant_id = 9) const int B3 = 0;
layout(constant_id = 10) const uint RND = 0u;
layout(constant_id = 11) const int S0 = 0;  // the binding stage s's result is stored in (not the last's); 0: none
layout(constant_id = 12) const int S1 = 0;
layout(constant_id = 13) const int S2 = 0;

KILN_BUFFER(0, y)
KILN_BUFFER(1, x1)
KILN_BUFFER(2, x2)
KILN_BUFFER(3, x3)
KILN_BUFFER(4, x4)
KILN_BUFFER(5, x5)
KILN_BUFFER(6, x6)
KILN_BUFFER(7, x7)
// The same bindings as 32-bit words: a dropout stage's key (i32).
#define KILN_WORDS(B, NAME) layout(std430, set = 0, binding = B) buffer NAME##_w_ { uint NAME##_w[]; };
KILN_WORDS(1, x1)
KILN_WORDS(2, x2)
KILN_WORDS(3, x3)
KILN_WORDS(4, x4)
KILN_WORDS(5, x5)
KILN_WORDS(6, x6)
KILN_WORDS(7, x7)

layout(push_constant) uniform Push {
  uint base[8];
  uint count;
  uint period[8];  // elements of each binding, repeated over the chain's (a suffix of its shape)
  float f[4];      // each stage's float attributes, as elementwise.comp's f and f2
  float f2[4];
  uint zero;  // 0, which the compiler cannot know: see stage()
  // The chain's DROPOUT_KEYED stage, if it has one (at most one): as
  // dropout.comp's, for a dispatch that starts at element 0.
  uint drop_period;
  uint drop_stride_lo;
  uint drop_stride_hi;
  uint drop_threshold;
  float drop_scale;
} p;

float ld(int k, uint i) {
  uint j = p.base[k] + i % p.period[k];
  if (k == 1) return x1_ld(j);
  if (k == 2) return x2_ld(j);
  if (k == 3) return x3_ld(j);
  if (k == 4) return x4_ld(j);
  if (k == 5) return x5_ld(j);
  if (k == 6) return x6_ld(j);
  return x7_ld(j);
}

void st(int k, uint i, float v) {
  uint j = p.base[k] + i;
  if (k == 1) x1_st(j, v);
  if (k == 2) x2_st(j, v);
  if (k == 3) x3_st(j, v);
  if (k == 4) x4_st(j, v);
  if (k == 5) x5_st(j, v);
  if (k == 6) x6_st(j, v);
  if (k == 7) x7_st(j, v);
}

uint word(int k, uint w) {
  uint j = p.base[k] + w;
  if (k == 1) return x1_w[j];
  if (k == 2) return x2_w[j];
  if (k == 3) return x3_w[j];
  if (k == 4) return x4_w[j];
  if (k == 5) return x5_w[j];
  if (k == 6) return x6_w[j];
  return x7_w[j];
}

// DROPOUT_KEYED of r with the key (seed, step, offset_lo, offset_hi, site)
// in binding k, as dropout.comp computes it.
float dropout(float r, int k, uint i) {
  uint bits = dropout_bits(i, 0u, 0u, 0u, p.drop_period, p.drop_stride_lo, p.drop_stride_hi, word(k, 0u), word(k, 1u),
                           word(k, 2u), word(k, 3u), word(k, 4u));
  return r * ((bits >> 8) >= p.drop_threshold ? p.drop_scale : 0.0);
}

// The stored-and-reloaded value of an intermediate: f32 as it is, a 16-bit
// dtype rounded to it and widened back (the f32-only build has no 16-bit
// values, and lowering never asks it to round).
float rounded(int s, float v) {
#ifdef KILN_16BIT
  uint dt = (RND >> (2u * uint(s))) & 3u;
  if (dt != 0u) return kiln_widen(dt, kiln_narrow(dt, v));
#endif
  return v;
}

float stage(int s, int op, int b, float r, uint i) {
  float v = op == KILN_OP_DROPOUT_KEYED ? dropout(r, b, i)
                                        : elementwise_op(op, r, b > 0 ? ld(b, i) : 0.0, p.f[s], p.f2[s]);
  // Through its bits, as a store and a load would pass it: the compiler
  // cannot contract this stage's last operation with the next stage's
  // first (a MUL then an ADD into one fma would round once where the
  // unfused kernels round twice). `precise` would not reach into the
  // inlined op.
  return uintBitsToFloat(floatBitsToUint(rounded(s, v)) ^ p.zero);
}

void main() {
  uint i = global_index();
  if (i >= p.count) return;
  float r = stage(0, OP0, B0, ld(1, i), i);
  if (STAGES > 1) {
    if (S0 > 0) st(S0, i, r);
    r = stage(1, OP1, B1, r, i);
  }
  if (STAGES > 2) {
    if (S1 > 0) st(S1, i, r);
    r = stage(2, OP2, B2, r, i);
  }
  if (STAGES > 3) {
    if (S2 > 0) st(S2, i, r);
    r = stage(3, OP3, B3, r, i);
  }
  y_st(p.base[0] + i, r);
}
