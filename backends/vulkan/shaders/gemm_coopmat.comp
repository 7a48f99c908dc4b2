#version 450
// C[z] (+)= op(A[z]) @ op(B[z]) on tensor cores (VK_NV_cooperative_matrix),
// for f16 or bf16 A and B, summed in f32 and stored through io.glsl's c_st
// (f32 or a 16-bit C). Same bindings and push constants as gemm.comp and
// gemm_tiled.comp, so lowering.cpp's windows, K-chunk accumulate and batch
// strides serve all three; gemm_choice.h says when this one runs.
//
// A workgroup of 4 subgroups computes a 64 x 64 tile of C, each subgroup a
// 32 x 32 quarter of it as a grid of FM x FN accumulator fragments. 32-deep
// slices of A and B are read into registers one slice ahead (their loads in
// flight during the current slice's multiply-adds), then staged in shared
// memory as f16 (transposes, ragged edges filled with zeros, any stride),
// and fragments are loaded from there:
// the cooperative loads then see aligned, padded rows whatever the operand's
// layout. At the end each fragment goes through a per-subgroup f32 scratch
// so that C is written element by element with bounds checks, += on a later
// K chunk, and rounding to a 16-bit C by c_st.
//
// Built twice (CMakeLists.txt): gemm_coopmat16, on the extension; and
// gemm_coopmat_emulated16 (KILN_COOPMAT_EMULATED), the same tiling, staging
// and write-out with the fragment operations written as plain arithmetic, so
// that a device without tensor cores (lavapipe in CI) tests everything but
// the hardware's multiply-add. In the emulated build a "subgroup" is SG
// consecutive invocations; an A or B fragment is its offset in shared memory
// (it is only read between the barriers that keep the slice in place) and
// an accumulator is spread over the subgroup, element e = lane + SG * t in
// invocation `lane`'s register t, as the hardware spreads it.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#ifndef KILN_COOPMAT_EMULATED
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
#include "common.glsl"
#include "io.glsl"

layout(constant_id = 1) const bool TRANS_A = false;
layout(constant_id = 2) const bool TRANS_B = false;
// The fragment shape (f16 x f16 + f32) and subgroup size NVIDIA's drivers
// report, which gemm_choice.h requires of a device. Constants, not
// specialization constants: glslc unrolls only loops whose trip counts it
// knows, so every fragment loop is unrolled in the SPIR-V itself and no
// register array index is left for the driver to resolve after
// specialization. NVIDIA's resolved gemm.comp's loops, but an index it
// could not resolve in gemm_tiled.comp put the array in local memory (an
// H100: 2 TFLOP/s instead of 15); with constants nothing depends on it.
// The workgroup (constant 0) is WARPS * SG invocations.
const uint FM = 16, FN = 16, FK = 16;
const uint SG = 32;

const uint BM = 64, BN = 64, BK = 32;  // C tile and slice depth
const uint WARPS = 4;                  // 2 x 2 subgroups, each a WM x WN block of C
const uint WM = 32, WN = 32;
const uint FRAGS_M = WM / FM, FRAGS_N = WN / FN, KSTEPS = BK / FK;
const uint WG = WARPS * SG;
// Shared rows padded by 8 halves: 80- and 144-byte rows, multiples of the
// 16 bytes a cooperative load wants, and staggered over the banks.
const uint LDA = BK + 8, LDB = BN + 8;
const uint FRAG = FM * FN;  // elements of one accumulator fragment
const uint RA = BM * BK / WG, RB = BK * BN / WG;  // staged elements of A and B per invocation
// Which operands are bf16 and so staged with a slice scale (io.glsl's
// dtype codes: 1 bf16, 2 f16).
const bool SCALE_A = ((kDtypes >> 2u) & 3u) == 1u;
const bool SCALE_B = ((kDtypes >> 4u) & 3u) == 1u;

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

#ifdef KILN_COOPMAT_EMULATED
#define STAGE_T float
const uint EPL = FRAG / SG;  // accumulator elements per invocation
#define ACC_T float[EPL]
#define A_T uint
#define B_T uint
#define ACC_ZERO(x) [[unroll]] for (uint t_ = 0; t_ < EPL; ++t_) x[t_] = 0.0;
#define LOAD_A(x, off) x = (off);
#define LOAD_B(x, off) x = (off);
// The element loop stays a loop: unrolled, its 8 x 16 products per
// fragment per step made llvmpipe compile for seconds per pipeline. The
// products' loop is unrolled, so an invocation's loop iterations (llvmpipe
// ends them all after 65535) grow by only 8 per fragment and step: about
// 2 per element of K.
#define MAD(acc, fa, fb)                                                    \
  [[dont_unroll]] for (uint t_ = 0; t_ < EPL; ++t_) {                       \
    const uint e_ = lane + SG * t_, r_ = e_ / FN, c_ = e_ % FN;             \
    float s_ = acc[t_];                                                     \
    [[unroll]] for (uint k_ = 0; k_ < FK; ++k_)                             \
      s_ += As[fa + r_ * LDA + k_] * Bs[fb + k_ * LDB + c_];                \
    acc[t_] = s_;                                                           \
  }
#define STORE_C(acc, off)                                                   \
  [[unroll]] for (uint t_ = 0; t_ < EPL; ++t_) Cs[(off) + lane + SG * t_] = acc[t_];
#define SCALE_ACC(acc, f) [[unroll]] for (uint t_ = 0; t_ < EPL; ++t_) acc[t_] *= (f);
#else
#define STAGE_T float16_t
#define ACC_T fcoopmatNV<32, gl_ScopeSubgroup, FM, FN>
#define A_T fcoopmatNV<16, gl_ScopeSubgroup, FM, FK>
#define B_T fcoopmatNV<16, gl_ScopeSubgroup, FK, FN>
#define ACC_ZERO(x) x = ACC_T(0.0);
#define LOAD_A(x, off) coopMatLoadNV(x, As, off, LDA, false);
#define LOAD_B(x, off) coopMatLoadNV(x, Bs, off, LDB, false);
#define MAD(acc, fa, fb) acc = coopMatMulAddNV(fa, fb, acc);
#define STORE_C(acc, off) coopMatStoreNV(acc, Cs, off, FN, false);
#define SCALE_ACC(acc, f) acc = acc * (f);
#endif

// An operand element as loaded: a 16-bit binding's bits (f16 or bf16) or
// an f32 binding's. Kept raw until the slice's scale is known.
uint a_raw(uint i) { return kiln_dtype(1) == 0u ? floatBitsToUint(a_f32[i]) : uint(a_u16[i]); }
uint b_raw(uint i) { return kiln_dtype(2) == 0u ? floatBitsToUint(b_f32[i]) : uint(b_u16[i]); }

// 2^e for e in [-126, 127], exactly.
float pow2(int e) { return uintBitsToFloat(uint(e + 127) << 23); }

// v * 2^e for any e = -(eA + eB) (within [-252, 224]) as two exact
// multiplications: no loop, so the write-out's loops over the accumulator
// fragments unroll (see FM).
float times_pow2(float v, int e) {
  const int half_e = e / 2;
  return v * pow2(half_e) * pow2(e - half_e);
}

// The scale exponent of a bf16 slice whose largest magnitude has these
// bits (sign cleared): its exponent moved to 15, at most 2^126 (a slice of
// zeros and bf16 subnormals gets 2^126, which makes them normal f16); a
// slice holding infinity or NaN is not scaled (they stay what they are).
int slice_exponent(uint amax) {
  const int e = int(amax >> 7);
  return e == 255 ? 0 : min(142 - e, 126);
}

// A raw element as staged in shared memory: f16 as it is; bf16 times the
// slice's scale, then f16 (exact, see above); f32 rounded to f16 (lossy:
// gemm_choice.h never sends an f32 operand here). On tensor cores an f16
// element is a bitcast: io.glsl's integer widening and a narrowing back
// would be about 20 instructions per staged element, and a 64 x 64 x 32
// slice has only 32 products per staged element, which tensor cores run
// far faster than SIMT instructions (an estimate: no GPU has measured it).
// The emulated build rounds to f16 in integer arithmetic (half.glsl) and
// stages the f32 value of the result: what the fragments would hold.
STAGE_T stage(uint dt, uint raw, float scale) {
#ifdef KILN_COOPMAT_EMULATED
  if (dt == 2u) return uintBitsToFloat(f16_to_f32(raw));
  const float v = dt == 1u ? uintBitsToFloat(raw << 16) * scale : uintBitsToFloat(raw);
  return uintBitsToFloat(f16_to_f32(f32_to_f16(floatBitsToUint(v))));
#else
  if (dt == 2u) return unpackFloat2x16(raw).x;
  return float16_t(dt == 1u ? uintBitsToFloat(raw << 16) * scale : uintBitsToFloat(raw));
#endif
}

shared STAGE_T As[BM * LDA];  // [m][k]
shared STAGE_T Bs[BK * LDB];  // [k][n]
shared float Cs[WARPS * FRAG];  // one fragment per subgroup, row-major
// Largest bf16 magnitude (bits) of A's and B's slice, for slices of even
// and odd index: a slice's maxima gather while the last one's are read.
shared uint slice_max[4];

// This invocation's share of a slice's largest magnitude into slice_max[at].
void gather_max(uint at, uint m) {
#ifdef KILN_COOPMAT_EMULATED
  atomicMax(slice_max[at], m);
#else
  m = subgroupMax(m);
  if (subgroupElect()) atomicMax(slice_max[at], m);
#endif
}

// Where this invocation's r-th staged element of a slice sits: A's (m, k)
// and B's (k, n) within the slice. Consecutive invocations take consecutive
// stored elements (a row of A, or of A^T), so a subgroup reads whole
// segments of global memory.
uvec2 a_mk(uint tid, uint r) {
  const uint idx = tid + r * WG;
  return TRANS_A ? uvec2(idx % BM, idx / BM) : uvec2(idx / BK, idx % BK);
}
uvec2 b_kn(uint tid, uint r) {
  const uint idx = tid + r * WG;
  return TRANS_B ? uvec2(idx % BK, idx / BK) : uvec2(idx / BN, idx % BN);
}

// This invocation's elements of the slice at k0, raw, into ra and rb, and
// for a bf16 operand their largest magnitude into slice_max[parity (+1)].
uint ra[RA], rb[RB];
void fetch(uint k0, uint parity, uint tid, uint m0, uint n0, uint abase, uint bbase) {
  [[unroll]] for (uint r = 0; r < RA; ++r) {
    const uvec2 at = a_mk(tid, r);
    const uint gm = m0 + at.x, gk = k0 + at.y;
    ra[r] = (gm < p.M && gk < p.K) ? a_raw(abase + (TRANS_A ? gk * p.lda + gm : gm * p.lda + gk)) : 0u;
  }
  [[unroll]] for (uint r = 0; r < RB; ++r) {
    const uvec2 at = b_kn(tid, r);
    const uint gk = k0 + at.x, gn = n0 + at.y;
    rb[r] = (gn < p.N && gk < p.K) ? b_raw(bbase + (TRANS_B ? gn * p.ldb + gk : gk * p.ldb + gn)) : 0u;
  }
  if (SCALE_A) {
    uint m = 0u;
    [[unroll]] for (uint r = 0; r < RA; ++r) m = max(m, ra[r] & 0x7FFFu);
    gather_max(parity, m);
  }
  if (SCALE_B) {
    uint m = 0u;
    [[unroll]] for (uint r = 0; r < RB; ++r) m = max(m, rb[r] & 0x7FFFu);
    gather_max(parity + 1u, m);
  }
}

void main() {
  const uint tid = gl_LocalInvocationID.x;
#ifdef KILN_COOPMAT_EMULATED
  const uint warp = tid / SG, lane = tid % SG;
#else
  const uint warp = gl_SubgroupID, lane = gl_SubgroupInvocationID;
#endif
  const uint wm = (warp / 2) * WM, wn = (warp % 2) * WN;
  const uint m0 = gl_WorkGroupID.y * BM, n0 = gl_WorkGroupID.x * BN, z = gl_WorkGroupID.z;
  const uint abase = p.base[1] + z * p.batch_a;
  const uint bbase = p.base[2] + z * p.batch_b;
  const uint cbase = p.base[0] + z * p.batch_c;
  const uint dta = kiln_dtype(1), dtb = kiln_dtype(2);

  ACC_T acc[FRAGS_M][FRAGS_N];
  [[unroll]] for (uint i = 0; i < FRAGS_M; ++i)
    [[unroll]] for (uint j = 0; j < FRAGS_N; ++j) { ACC_ZERO(acc[i][j]) }
  // The accumulators hold sums times 2^unit: the last slice's eA + eB.
  int unit = 0;
  if (SCALE_A || SCALE_B) {
    if (tid < 4) slice_max[tid] = 0u;
    barrier();
  }

  // Software pipelining: the next slice's global loads are issued before
  // the current slice's multiply-adds, so their latency hides behind them.
  fetch(0u, 0u, tid, m0, n0, abase, bbase);
  for (uint k0 = 0, parity = 0; k0 < p.K; k0 += BK, parity ^= 2u) {
    barrier();  // the last slice's fragments are loaded; this slice's maxima are in
    const int ea = SCALE_A ? slice_exponent(slice_max[parity]) : 0;
    const int eb = SCALE_B ? slice_exponent(slice_max[parity + 1u]) : 0;
    // The next slice's slots: their last reads were before the barrier
    // above, their next writes (fetch) come after the one below.
    if ((SCALE_A || SCALE_B) && tid < 2) slice_max[(parity ^ 2u) + tid] = 0u;
    const float sa = pow2(ea), sb = pow2(eb);
    [[unroll]] for (uint r = 0; r < RA; ++r) {
      const uvec2 at = a_mk(tid, r);
      As[at.x * LDA + at.y] = stage(dta, ra[r], sa);
    }
    [[unroll]] for (uint r = 0; r < RB; ++r) {
      const uvec2 at = b_kn(tid, r);
      Bs[at.x * LDB + at.y] = stage(dtb, rb[r], sb);
    }
    barrier();
    if (k0 + BK < p.K) fetch(k0 + BK, parity ^ 2u, tid, m0, n0, abase, bbase);
    // The same exponents in every invocation, so the rescale is uniform.
    for (int d = ea + eb - unit; d != 0;) {
      const int step = clamp(d, -126, 126);
      const float f = pow2(step);
      [[unroll]] for (uint i = 0; i < FRAGS_M; ++i)
        [[unroll]] for (uint j = 0; j < FRAGS_N; ++j) { SCALE_ACC(acc[i][j], f) }
      d -= step;
    }
    unit = ea + eb;
    [[unroll]] for (uint kk = 0; kk < KSTEPS; ++kk) {
      A_T fa[FRAGS_M];
      B_T fb[FRAGS_N];
      [[unroll]] for (uint i = 0; i < FRAGS_M; ++i) { LOAD_A(fa[i], (wm + i * FM) * LDA + kk * FK) }
      [[unroll]] for (uint j = 0; j < FRAGS_N; ++j) { LOAD_B(fb[j], kk * FK * LDB + wn + j * FN) }
      [[unroll]] for (uint i = 0; i < FRAGS_M; ++i)
        [[unroll]] for (uint j = 0; j < FRAGS_N; ++j) { MAD(acc[i][j], fa[i], fb[j]) }
    }
  }

  // Each fragment through this subgroup's scratch, then to C element by
  // element: lane, lane + SG, ... of its FM x FN elements.
  const bool more = p.accumulate != 0;
  [[unroll]] for (uint i = 0; i < FRAGS_M; ++i)
    [[unroll]] for (uint j = 0; j < FRAGS_N; ++j) {
      barrier();  // the previous fragment's elements are written out
      STORE_C(acc[i][j], warp * FRAG)
      barrier();
      [[unroll]] for (uint t = 0; t < FRAG / SG; ++t) {
        const uint e = lane + SG * t;
        const uint gm = m0 + wm + i * FM + e / FN, gn = n0 + wn + j * FN + e % FN;
        if (gm < p.M && gn < p.N) {
          const uint at = cbase + gm * p.ldc + gn;
          const float v = times_pow2(Cs[warp * FRAG + e], -unit);
          c_st(at, more ? c_ld(at) + v : v);
        }
      }
    }
}
