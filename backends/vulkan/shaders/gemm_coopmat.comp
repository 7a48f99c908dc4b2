#version 450
// C[z] (+)= op(A[z]) @ op(B[z]) on tensor cores (VK_NV_cooperative_matrix),
// for f16 or bf16 A and B, summed in f32 and stored through io.glsl's c_st
// (f32 or a 16-bit C). Same bindings and push constants as gemm.comp and
// gemm_tiled.comp, so lowering.cpp's windows, K-chunk accumulate and batch
// strides serve all three; gemm_choice.h says when this one runs. Both
// operands must be 16-bit (gemm_choice never narrows an f32 one).
//
// A workgroup computes a TILE x TILE block of C: 64 x 64 with 4 subgroups
// (2 x 2, each 32 x 32) or 128 x 128 with 8 (2 x 4, each 64 x 32), each
// subgroup a grid of FM x FN accumulator fragments. 32-deep slices of A and
// B are read into registers one slice ahead (their loads in flight during
// the current slice's multiply-adds), 8 elements (16 bytes) per load where
// the operand's rows allow, then staged in shared memory as f16 in the
// operand's own layout (padded rows; a transposed operand's fragments are
// loaded column-major), ragged edges filled with zeros. At the end each
// fragment goes through the subgroup's own f32 scratch, so that C is
// written element by element with bounds checks, += on a later K chunk,
// and rounding to a 16-bit C by c_st, with no workgroup barrier.
//
// Built four times (CMakeLists.txt): gemm_coopmat16 and gemm_coopmat_large16
// (KILN_COOPMAT_TILE 64 and 128) on the extension; and their _emulated16
// builds (KILN_COOPMAT_EMULATED), the same tiling, staging and write-out
// with the fragment operations written as plain f32 arithmetic, so that a
// device without tensor cores (lavapipe in CI) tests everything but the
// hardware's multiply-add. In the emulated build a "subgroup" is SG
// consecutive invocations; an A or B fragment is its offset in shared
// memory (it is only read between the barriers that keep the slice in
// place) and an accumulator is spread over the subgroup, element
// e = lane + SG * t in invocation `lane`'s register t, as the hardware
// spreads it.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#ifndef KILN_COOPMAT_EMULATED
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
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

#ifndef KILN_COOPMAT_TILE
#define KILN_COOPMAT_TILE 64
#endif
const uint BM = KILN_COOPMAT_TILE, BN = KILN_COOPMAT_TILE, BK = 32;  // C tile and slice depth
const uint WARPS_M = 2, WARPS_N = BN / 32, WARPS = WARPS_M * WARPS_N;
const uint WM = BM / WARPS_M, WN = BN / WARPS_N;  // one subgroup's block of C
const uint FRAGS_M = WM / FM, FRAGS_N = WN / FN, KSTEPS = BK / FK;
const uint WG = WARPS * SG;
// A slice as stored: A is [m][k] (BM rows of BK) or, transposed, [k][m];
// B is [k][n] or [n][k]. Shared rows are padded by 8 halves: multiples of
// the 16 bytes a cooperative load wants, staggered over the banks.
const uint A_ROWS = TRANS_A ? BK : BM, A_COLS = TRANS_A ? BM : BK, LDA = A_COLS + 8;
const uint B_ROWS = TRANS_B ? BN : BK, B_COLS = TRANS_B ? BK : BN, LDB = B_COLS + 8;
const uint FRAG = FM * FN;  // elements of one accumulator fragment
const uint V = 8;           // elements per vector load (a uvec4 of 16-bit values)
// Vectors of A's slice per invocation (2 for either tile), and of B's: the
// tile is square.
const uint VR = BM * BK / (V * WG);
// Which operands are bf16 and so staged with a slice scale (io.glsl's
// dtype codes: 1 bf16, 2 f16).
const bool SCALE_A = ((kDtypes >> 2u) & 3u) == 1u;
const bool SCALE_B = ((kDtypes >> 4u) & 3u) == 1u;

KILN_BUFFER(0, c)
KILN_BUFFER(1, a)
KILN_BUFFER(2, b)
// The same bindings read 16 bytes at a time.
layout(std430, set = 0, binding = 1) buffer a_v4_ { uvec4 a_v4[]; };
layout(std430, set = 0, binding = 2) buffer b_v4_ { uvec4 b_v4[]; };

layout(push_constant) uniform Push {
  uint base[3];
  uint M, N, K;
  uint lda, ldb, ldc;                   // row strides as stored
  uint batch_a, batch_b, batch_c;       // elements between batches
  uint accumulate;                      // 1: C += product (a later K chunk)
} p;

#ifdef KILN_COOPMAT_EMULATED
const uint EPL = FRAG / SG;  // accumulator elements per invocation
#define ACC_T float[EPL]
#define A_T uint
#define B_T uint
#define ACC_ZERO(x) [[unroll]] for (uint t_ = 0; t_ < EPL; ++t_) x[t_] = 0.0;
#define LOAD_A(x, off) x = (off);
#define LOAD_B(x, off) x = (off);
// A's (r, k) and B's (k, c) of the fragments at fa and fb, as stored.
#define A_AT(fa, r, k) float(As[(fa) + (TRANS_A ? (k) * LDA + (r) : (r) * LDA + (k))])
#define B_AT(fb, k, c) float(Bs[(fb) + (TRANS_B ? (c) * LDB + (k) : (k) * LDB + (c))])
// The element loop stays a loop: unrolled, its 8 x 16 products per
// fragment per step made llvmpipe compile for seconds per pipeline. The
// products' loop is unrolled, so an invocation's loop iterations (llvmpipe
// ends them all after 65535) grow by only 8 per fragment and step: about
// 4 per element of K on the large tile.
#define MAD(acc, fa, fb)                                                    \
  [[dont_unroll]] for (uint t_ = 0; t_ < EPL; ++t_) {                       \
    const uint e_ = lane + SG * t_, r_ = e_ / FN, c_ = e_ % FN;             \
    float s_ = acc[t_];                                                     \
    [[unroll]] for (uint k_ = 0; k_ < FK; ++k_)                             \
      s_ += A_AT(fa, r_, k_) * B_AT(fb, k_, c_);                            \
    acc[t_] = s_;                                                           \
  }
#define STORE_C(acc, off)                                                   \
  [[unroll]] for (uint t_ = 0; t_ < EPL; ++t_) Cs[(off) + lane + SG * t_] = acc[t_];
#define SCALE_ACC(acc, f) [[unroll]] for (uint t_ = 0; t_ < EPL; ++t_) acc[t_] *= (f);
// A subgroup's scratch written and read by its own invocations; emulated
// subgroups are not the device's, so the whole workgroup waits.
#define SUBGROUP_SYNC() barrier();
#else
#define ACC_T fcoopmatNV<32, gl_ScopeSubgroup, FM, FN>
#define A_T fcoopmatNV<16, gl_ScopeSubgroup, FM, FK>
#define B_T fcoopmatNV<16, gl_ScopeSubgroup, FK, FN>
#define ACC_ZERO(x) x = ACC_T(0.0);
#define LOAD_A(x, off) coopMatLoadNV(x, As, off, LDA, TRANS_A);
#define LOAD_B(x, off) coopMatLoadNV(x, Bs, off, LDB, TRANS_B);
#define MAD(acc, fa, fb) acc = coopMatMulAddNV(fa, fb, acc);
#define STORE_C(acc, off) coopMatStoreNV(acc, Cs, off, FN, false);
#define SCALE_ACC(acc, f) acc = acc * (f);
#define SUBGROUP_SYNC() subgroupMemoryBarrierShared(); subgroupBarrier();
#endif

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

// One bf16 element times the slice's scale, as f16: exact for every element
// within 2^32 of the slice's largest (f16 has 3 more significand bits than
// bf16), a smaller one rounded onto f16's subnormal grid. The emulated build
// rounds in integer arithmetic (half.glsl, to nearest even) and so does not
// depend on the device's conversion.
float16_t bf16_scaled(uint h, float scale) {
  const float v = uintBitsToFloat(h << 16) * scale;
#ifdef KILN_COOPMAT_EMULATED
  return unpackFloat2x16(f32_to_f16(floatBitsToUint(v))).x;
#else
  return float16_t(v);
#endif
}

// Two packed raw elements (the low half first) as staged: f16 as they are,
// a bitcast (io.glsl's integer widening and a narrowing back would be about
// 20 instructions per staged element, and a slice has only 32 (64 x 64
// tile) or 64 (128 x 128) products per staged element, which tensor cores
// run far faster than SIMT instructions: an estimate, no GPU has measured
// it); bf16 scaled.
f16vec2 stage2(uint dt, uint w, float scale) {
  if (dt == 2u) return unpackFloat2x16(w);
  return f16vec2(bf16_scaled(w & 0xFFFFu, scale), bf16_scaled(w >> 16, scale));
}

shared float16_t As[A_ROWS * LDA];
shared float16_t Bs[B_ROWS * LDB];
shared float Cs[WARPS * FRAG];  // one fragment per subgroup, row-major
// Largest bf16 magnitude (bits) of A's and B's slice, for slices of even
// and odd index: a slice's maxima gather while the last one's are read.
shared uint slice_max[4];

// This invocation's vectors (REGS) of a slice into shared memory S (rows of
// LD, COLS of them the slice's), as stage2 converts them.
#define STAGE(S, LD, COLS, REGS, DT, SCALE)                     \
  [[unroll]] for (uint r = 0; r < VR; ++r) {                    \
    const uvec2 at = vector_at(tid, r, COLS);                   \
    [[unroll]] for (uint j = 0; j < V / 2; ++j) {               \
      const f16vec2 h = stage2(DT, REGS[r][j], SCALE);          \
      S[at.x * LD + at.y + 2 * j] = h.x;                        \
      S[at.x * LD + at.y + 2 * j + 1] = h.y;                    \
    }                                                           \
  }

// The largest magnitude (bits, sign cleared) of an invocation's share of
// a slice into slice_max[at]: a packed pair's halves compared apart.
void gather_max(uint at, uvec4 raw[VR]) {
  uvec4 v = uvec4(0u);
  [[unroll]] for (uint r = 0; r < VR; ++r) v = max(v, max(raw[r] & 0x7FFFu, (raw[r] >> 16) & 0x7FFFu));
  uint m = max(max(v.x, v.y), max(v.z, v.w));
#ifdef KILN_COOPMAT_EMULATED
  atomicMax(slice_max[at], m);
#else
  m = subgroupMax(m);
  if (subgroupElect()) atomicMax(slice_max[at], m);
#endif
}

// Where this invocation's r-th vector of a slice sits in a stored slice of
// `cols` columns: (row, first column). Consecutive invocations take
// consecutive 16-byte pieces of a row, so a subgroup reads whole segments of
// global memory.
uvec2 vector_at(uint tid, uint r, uint cols) {
  const uint idx = tid + r * WG;
  return uvec2(idx / (cols / V), (idx % (cols / V)) * V);
}

// load_a and load_b: eight stored elements from `at` on, of which those
// before column `cols` exist (zeros after), packed two to a word: one
// 16-byte load where all do and `at` is a multiple of 8 (whole = the
// operand's base and row stride are), else one by one.
#define LOAD_VECTOR(NAME)                                                          \
  uvec4 load_##NAME(uint at, uint col, uint cols, bool whole) {                    \
    if (whole && col + V <= cols) return NAME##_v4[at / V];                        \
    uvec4 v = uvec4(0u);                                                           \
    [[unroll]] for (uint j = 0; j < V; ++j)                                        \
      if (col + j < cols) v[j / 2] |= uint(NAME##_u16[at + j]) << (16u * (j & 1u)); \
    return v;                                                                      \
  }
LOAD_VECTOR(a)
LOAD_VECTOR(b)

// This invocation's vectors of the slice at k0, raw, into ra and rb, and
// for a bf16 operand their largest magnitude into slice_max[parity (+1)].
// A stored row of A is an m (k if transposed) from m0 (k0), its columns k
// from k0 (m from m0); B's likewise.
uvec4 ra[VR], rb[VR];
void fetch(uint k0, uint parity, uint tid, uint m0, uint n0, uint abase, uint bbase, bool a_whole, bool b_whole) {
  const uint a_row0 = TRANS_A ? k0 : m0, a_col0 = TRANS_A ? m0 : k0;
  const uint a_rows = TRANS_A ? p.K : p.M, a_cols = TRANS_A ? p.M : p.K;
  [[unroll]] for (uint r = 0; r < VR; ++r) {
    const uvec2 at = vector_at(tid, r, A_COLS);
    const uint row = a_row0 + at.x, col = a_col0 + at.y;
    ra[r] = row < a_rows ? load_a(abase + row * p.lda + col, col, a_cols, a_whole) : uvec4(0u);
  }
  const uint b_row0 = TRANS_B ? n0 : k0, b_col0 = TRANS_B ? k0 : n0;
  const uint b_rows = TRANS_B ? p.N : p.K, b_cols = TRANS_B ? p.K : p.N;
  [[unroll]] for (uint r = 0; r < VR; ++r) {
    const uvec2 at = vector_at(tid, r, B_COLS);
    const uint row = b_row0 + at.x, col = b_col0 + at.y;
    rb[r] = row < b_rows ? load_b(bbase + row * p.ldb + col, col, b_cols, b_whole) : uvec4(0u);
  }
  if (SCALE_A) gather_max(parity, ra);
  if (SCALE_B) gather_max(parity + 1u, rb);
}

void main() {
  const uint tid = gl_LocalInvocationID.x;
#ifdef KILN_COOPMAT_EMULATED
  const uint warp = tid / SG, lane = tid % SG;
#else
  const uint warp = gl_SubgroupID, lane = gl_SubgroupInvocationID;
#endif
  const uint wm = (warp / WARPS_N) * WM, wn = (warp % WARPS_N) * WN;
  const uint m0 = gl_WorkGroupID.y * BM, n0 = gl_WorkGroupID.x * BN, z = gl_WorkGroupID.z;
  const uint abase = p.base[1] + z * p.batch_a;
  const uint bbase = p.base[2] + z * p.batch_b;
  const uint cbase = p.base[0] + z * p.batch_c;
  const uint dta = kiln_dtype(1), dtb = kiln_dtype(2);
  const bool a_whole = abase % V == 0u && p.lda % V == 0u, b_whole = bbase % V == 0u && p.ldb % V == 0u;

  ACC_T acc[FRAGS_M][FRAGS_N];
  [[unroll]] for (uint i = 0; i < FRAGS_M; ++i)
    [[unroll]] for (uint j = 0; j < FRAGS_N; ++j) { ACC_ZERO(acc[i][j]) }
  // The accumulators hold sums times 2^unit, which only ever goes down
  // (NO_UNIT: nothing summed yet).
  const int NO_UNIT = 1000;
  int unit = NO_UNIT;
  if (SCALE_A || SCALE_B) {
    if (tid < 4) slice_max[tid] = 0u;
    barrier();
  }

  // Software pipelining: the next slice's global loads are issued before
  // the current slice's multiply-adds, so their latency hides behind them.
  fetch(0u, 0u, tid, m0, n0, abase, bbase, a_whole, b_whole);
  for (uint k0 = 0, parity = 0; k0 < p.K; k0 += BK, parity ^= 2u) {
    barrier();  // the last slice's fragments are loaded; this slice's maxima are in
    int ea = SCALE_A ? slice_exponent(slice_max[parity]) : 0;
    int eb = SCALE_B ? slice_exponent(slice_max[parity + 1u]) : 0;
    // The next slice's slots: their last reads were before the barrier
    // above, their next writes (fetch) come after the one below.
    if ((SCALE_A || SCALE_B) && tid < 2) slice_max[(parity ^ 2u) + tid] = 0u;
    // A slice of smaller values than the last (its eA + eB above the unit)
    // is scaled less, into the accumulators' unit, rather than raising the
    // unit: that would multiply what is summed by up to 2^252 (a slice of
    // zeros gets 2^126 per operand) and overflow it. What is lost is what
    // falls below f16's subnormals then, at most 2^-24 of a staged value
    // that was in [2^15, 2^16): as a sum in f32 would lose it next to the
    // larger terms. The exponents stay within [-126, 126] (unit >= -224,
    // the lowest of eA + eB), A's taken down first.
    const int target = min(ea + eb, unit);
    if (SCALE_A) ea = max(ea - (ea + eb - target), -126);
    if (SCALE_B) eb = target - ea;
    const float sa = pow2(ea), sb = pow2(eb);
    STAGE(As, LDA, A_COLS, ra, dta, sa)
    STAGE(Bs, LDB, B_COLS, rb, dtb, sb)
    barrier();
    if (k0 + BK < p.K) fetch(k0 + BK, parity ^ 2u, tid, m0, n0, abase, bbase, a_whole, b_whole);
    // The same exponents in every invocation, so the rescale is uniform:
    // down to a slice of larger values' unit, in steps within f32's range.
    for (int d = unit == NO_UNIT ? 0 : ea + eb - unit; d < 0;) {
      const int step = max(d, -126);
      const float f = pow2(step);
      [[unroll]] for (uint i = 0; i < FRAGS_M; ++i)
        [[unroll]] for (uint j = 0; j < FRAGS_N; ++j) { SCALE_ACC(acc[i][j], f) }
      d -= step;
    }
    unit = ea + eb;
    [[unroll]] for (uint kk = 0; kk < KSTEPS; ++kk) {
      A_T fa[FRAGS_M];
      B_T fb[FRAGS_N];
      // A fragment's first element (row wm + i * FM, column kk * FK of the
      // slice's m x k) and B's (row kk * FK, column wn + j * FN of k x n),
      // as stored.
      [[unroll]] for (uint i = 0; i < FRAGS_M; ++i) {
        const uint fm = wm + i * FM, fk = kk * FK;
        LOAD_A(fa[i], TRANS_A ? fk * LDA + fm : fm * LDA + fk)
      }
      [[unroll]] for (uint j = 0; j < FRAGS_N; ++j) {
        const uint fk = kk * FK, fn = wn + j * FN;
        LOAD_B(fb[j], TRANS_B ? fn * LDB + fk : fk * LDB + fn)
      }
      [[unroll]] for (uint i = 0; i < FRAGS_M; ++i)
        [[unroll]] for (uint j = 0; j < FRAGS_N; ++j) { MAD(acc[i][j], fa[i], fb[j]) }
    }
  }

  // Each fragment through this subgroup's scratch, then to C element by
  // element: lane, lane + SG, ... of its FM x FN elements.
  const bool more = p.accumulate != 0;
  [[unroll]] for (uint i = 0; i < FRAGS_M; ++i)
    [[unroll]] for (uint j = 0; j < FRAGS_N; ++j) {
      SUBGROUP_SYNC()  // the previous fragment's elements are written out
      STORE_C(acc[i][j], warp * FRAG)
      SUBGROUP_SYNC()
      [[unroll]] for (uint t = 0; t < FRAG / SG; ++t) {
        const uint e = lane + SG * t;
        const uint gm = m0 + wm + i * FM + e / FN, gn = n0 + wn + j * FN + e % FN;
        if (gm < p.M && gn < p.N) {
          const uint at = cbase + gm * p.ldc + gn;
          const float v = unit == NO_UNIT ? 0.0 : times_pow2(Cs[warp * FRAG + e], -unit);
          c_st(at, more ? c_ld(at) + v : v);
        }
      }
    }
}
