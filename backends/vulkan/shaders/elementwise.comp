#version 450
// FILL, ADD, MUL, SCALE, GELU, GELU_GRAD, SILU, SILU_GRAD, CLAMP, CLAMP_GRAD,
// GELU_ERF, GELU_ERF_GRAD, EXP, LOG, TANH, ERF, MAXIMUM (kiln/ops.h), chosen by OP.
// In place safe: element i of every input is read before y[i] is written.
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "io.glsl"
#include "kiln_ops.glsl"
#include "elementwise_ops.glsl"

// The node's op code in kiln's op table (kiln_ops.glsl is generated from
// it): no numbering of the shader's own.
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

void main() {
  uint i = global_index();
  if (i >= p.count) return;
  float x = OP == KILN_OP_FILL ? 0.0 : a_ld(p.base[1] + i);
  float b = op_reads_b(OP) ? b_ld(p.base[2] + i % p.bcast) : 0.0;
  y_st(p.base[0] + i, elementwise_op(OP, x, b, p.f, p.f2));
}
