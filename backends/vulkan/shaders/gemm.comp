#version 450
// C[z] (+)= op(A[z]) @ op(B[z]): a tiled GEMM. Each workgroup computes a
// BM x BN tile of C, staging BK-deep slices of A and B in shared memory;
// each invocation keeps a TM x TN block of C in registers. Tile sizes are
// specialization constants, shapes push constants; z (gl_WorkGroupID.z) is
// the batch.
//
// Every loop over the register block is [[unroll]]: an index into acc the
// compiler cannot resolve puts the whole array in memory. llvmpipe unrolls
// such loops by itself only below a size limit, which the store loop
// passed once f16's narrowing (half.glsl) was inlined into it: an f16 GEMM
// took 1.2x a bf16 one's time on lavapipe at K = 128, the same with the
// attribute.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "io.glsl"

layout(constant_id = 1) const uint BM = 64;
layout(constant_id = 2) const uint BN = 64;
layout(constant_id = 3) const uint BK = 16;
layout(constant_id = 4) const uint TM = 4;
layout(constant_id = 5) const uint TN = 4;
layout(constant_id = 6) const bool TRANS_A = false;
layout(constant_id = 7) const bool TRANS_B = false;

KILN_BUFFER(0, c)
KILN_BUFFER(1, a)
KILN_BUFFER(2, b)

layout(push_constant) uniform Push {
  uint base[3];
  uint M, N, K;
  uint lda, ldb, ldc;                   // row strides as stored
  uint batch_a, batch_b, batch_c;       // elements between batches
  uint accumulate;                      // 1: C += product (a later K chunk)
} p;

shared float As[BK * BM];
shared float Bs[BK * BN];

void main() {
  const uint threads = (BM / TM) * (BN / TN);
  uint tid = gl_LocalInvocationID.x;
  uint tx = tid % (BN / TN), ty = tid / (BN / TN);
  uint m0 = gl_WorkGroupID.y * BM, n0 = gl_WorkGroupID.x * BN, z = gl_WorkGroupID.z;
  uint abase = p.base[1] + z * p.batch_a;
  uint bbase = p.base[2] + z * p.batch_b;
  uint cbase = p.base[0] + z * p.batch_c;

  float acc[TM * TN];
  [[unroll]] for (uint i = 0; i < TM * TN; ++i) acc[i] = 0.0;

  for (uint k0 = 0; k0 < p.K; k0 += BK) {
    for (uint e = tid; e < BK * BM; e += threads) {
      uint kk = TRANS_A ? e / BM : e % BK;
      uint mm = TRANS_A ? e % BM : e / BK;
      uint gm = m0 + mm, gk = k0 + kk;
      float v = 0.0;
      if (gm < p.M && gk < p.K) v = TRANS_A ? a_ld(abase + gk * p.lda + gm) : a_ld(abase + gm * p.lda + gk);
      As[kk * BM + mm] = v;
    }
    for (uint e = tid; e < BK * BN; e += threads) {
      uint kk = TRANS_B ? e % BK : e / BN;
      uint nn = TRANS_B ? e / BK : e % BN;
      uint gn = n0 + nn, gk = k0 + kk;
      float v = 0.0;
      if (gn < p.N && gk < p.K) v = TRANS_B ? b_ld(bbase + gn * p.ldb + gk) : b_ld(bbase + gk * p.ldb + gn);
      Bs[kk * BN + nn] = v;
    }
    barrier();
    for (uint kk = 0; kk < BK; ++kk) {
      float ra[TM], rb[TN];
      [[unroll]] for (uint i = 0; i < TM; ++i) ra[i] = As[kk * BM + ty * TM + i];
      [[unroll]] for (uint j = 0; j < TN; ++j) rb[j] = Bs[kk * BN + tx * TN + j];
      [[unroll]] for (uint i = 0; i < TM; ++i)
        [[unroll]] for (uint j = 0; j < TN; ++j) acc[i * TN + j] += ra[i] * rb[j];
    }
    barrier();
  }

  [[unroll]] for (uint i = 0; i < TM; ++i) {
    uint gm = m0 + ty * TM + i;
    if (gm >= p.M) continue;
    [[unroll]] for (uint j = 0; j < TN; ++j) {
      uint gn = n0 + tx * TN + j;
      if (gn >= p.N) continue;
      uint at = cbase + gm * p.ldc + gn;
      c_st(at, p.accumulate != 0 ? c_ld(at) + acc[i * TN + j] : acc[i * TN + j]);
    }
  }
}
