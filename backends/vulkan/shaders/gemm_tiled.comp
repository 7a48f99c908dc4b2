#version 450
// C[z] (+)= op(A[z]) @ op(B[z]) for GPUs, where gemm.comp's 64 x 64 tiles
// leave the arithmetic units waiting on shared memory. Each workgroup of
// 256 invocations computes a 128 x 128 tile of C; each invocation an 8 x 8
// block of it held in registers, as two 4-row by two 4-column quarters
// 64 apart, so that a quarter-warp's 16-byte shared-memory reads are 128
// contiguous bytes (no bank conflicts). 16-deep slices of A and B are staged
// in shared memory with a padded row (stores of transposed slices spread
// over banks); the next slice's global loads are issued before the current
// slice's arithmetic, so their latency hides behind it. Same bindings and
// push constants as gemm.comp; lowering.cpp picks one or the other.
//
// Every register array (acc, pa, pb) is indexed by constants only, spelled
// out through the EACH* macros: glslc does not unroll loops, and one index
// it cannot resolve puts the whole array in local memory (measured on an
// H100: 2 TFLOP/s instead of 15 for gemm.comp).
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "io.glsl"

layout(constant_id = 1) const bool TRANS_A = false;
layout(constant_id = 2) const bool TRANS_B = false;

const uint BM = 128;       // tile rows (m) and columns (n)
const uint BK = 16;        // slice depth
const uint LDS = BM + 4;   // shared row stride in floats: a multiple of 4
const uint LOADS = BM * BK / 256;  // elements of each operand per invocation

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

// [k][m] and [k][n], as vec4 so the arithmetic loop reads 16 bytes at once.
shared vec4 As[BK * LDS / 4];
shared vec4 Bs[BK * LDS / 4];


void store1(uint at, float v) { c_st(at, p.accumulate != 0 ? c_ld(at) + v : v); }

void store4(uint row_at, uint gn, vec4 v) {
  if (gn < p.N) store1(row_at + gn, v.x);
  if (gn + 1 < p.N) store1(row_at + gn + 1, v.y);
  if (gn + 2 < p.N) store1(row_at + gn + 2, v.z);
  if (gn + 3 < p.N) store1(row_at + gn + 3, v.w);
}

void store_row(uint cbase, uint gm, uint n_lo, uint n_hi, vec4 lo, vec4 hi) {
  if (gm >= p.M) return;
  store4(cbase + gm * p.ldc, n_lo, lo);
  store4(cbase + gm * p.ldc, n_hi, hi);
}

#define EACH4(F) F(0) F(1) F(2) F(3)
#define EACH8(F) EACH4(F) F(4) F(5) F(6) F(7)

void main() {
  const uint tid = gl_LocalInvocationID.x;
  const uint tx = tid % 16, ty = tid / 16;
  const uint m0 = gl_WorkGroupID.y * BM, n0 = gl_WorkGroupID.x * BM, z = gl_WorkGroupID.z;
  const uint abase = p.base[1] + z * p.batch_a;
  const uint bbase = p.base[2] + z * p.batch_b;
  const uint cbase = p.base[0] + z * p.batch_c;

  // Which (k, m) of A's slice and (k, n) of B's slice this invocation loads
  // in its load r: consecutive invocations walk the stored rows, so warps
  // read whole segments of global memory.
  const uint a_k = TRANS_A ? tid / BM : tid % BK, a_m = TRANS_A ? tid % BM : tid / BK;
  const uint b_k = TRANS_B ? tid % BK : tid / BM, b_n = TRANS_B ? tid / BK : tid % BM;
  const uint a_step = TRANS_A ? 256 / BM : 256 / BK;  // k (TRANS_A) or m advances by this per r
  const uint b_step = TRANS_B ? 256 / BK : 256 / BM;  // n (TRANS_B) or k advances by this per r
#define A_K(r) (TRANS_A ? a_k + (r) * a_step : a_k)
#define A_M(r) (TRANS_A ? a_m : a_m + (r) * a_step)
#define B_K(r) (TRANS_B ? b_k : b_k + (r) * b_step)
#define B_N(r) (TRANS_B ? b_n + (r) * b_step : b_n)

  float pa[LOADS], pb[LOADS];
  vec4 acc[16];
#define ZERO(i) acc[i] = vec4(0.0); acc[8 + i] = vec4(0.0);
  EACH8(ZERO)

  // Global loads of slice k1 into pa/pb (zero outside the matrices).
#define LOAD(r)                                                                          \
  {                                                                                      \
    const uint gm = m0 + A_M(r), gk = k1 + A_K(r);                                       \
    pa[r] = (gm < p.M && gk < p.K) ? a_ld(abase + (TRANS_A ? gk * p.lda + gm : gm * p.lda + gk)) : 0.0; \
    const uint gn = n0 + B_N(r), gkb = k1 + B_K(r);                                      \
    pb[r] = (gn < p.N && gkb < p.K) ? b_ld(bbase + (TRANS_B ? gn * p.ldb + gkb : gkb * p.ldb + gn)) : 0.0; \
  }
#define STAGE(r)                                             \
  As[(A_K(r) * LDS + A_M(r)) / 4][A_M(r) % 4] = pa[r];       \
  Bs[(B_K(r) * LDS + B_N(r)) / 4][B_N(r) % 4] = pb[r];
  // One rank-1 update per row i of the two 4-row quarters.
#define FMA(i)                     \
  acc[i * 2] += a0[i] * b0;        \
  acc[i * 2 + 1] += a0[i] * b1;    \
  acc[8 + i * 2] += a1[i] * b0;    \
  acc[8 + i * 2 + 1] += a1[i] * b1;

  uint k1 = 0;
  EACH8(LOAD)
  for (uint k0 = 0; k0 < p.K; k0 += BK) {
    barrier();  // the previous slice's arithmetic is done with As/Bs
    EACH8(STAGE)
    barrier();
    k1 = k0 + BK;
    if (k1 < p.K) {
      EACH8(LOAD)
    }
    for (uint kk = 0; kk < BK; ++kk) {
      const vec4 a0 = As[(kk * LDS + ty * 4) / 4], a1 = As[(kk * LDS + 64 + ty * 4) / 4];
      const vec4 b0 = Bs[(kk * LDS + tx * 4) / 4], b1 = Bs[(kk * LDS + 64 + tx * 4) / 4];
      EACH4(FMA)
    }
  }

  // Row i of this invocation's block is ty*4 + i (i < 4) or 64 + ty*4 + i-4;
  // its columns tx*4 .. +3 (acc[2i]) and 64 + tx*4 .. +3 (acc[2i + 1]).
  const uint n_lo = n0 + tx * 4, n_hi = n0 + 64 + tx * 4;
#define STORE(i) store_row(cbase, m0 + (i < 4 ? ty * 4 + i : 64 + ty * 4 + (i - 4)), n_lo, n_hi, acc[2 * i], acc[2 * i + 1]);
  EACH8(STORE)
}
