#version 450
// ATTENTION and ATTENTION_GRAD (kiln/ops.h), and with DROPOUT their
// ATTENTION_DROPOUT twins, causal, one [T, D] matrix of
// q, k, v per workgroup row of the grid (gl_WorkGroupID.y), the
// probabilities never stored (FlashAttention's online softmax). A
// workgroup takes QB rows; S invocations share each row, E elements of it
// apiece (E * S = D), so a row's registers stay small whatever the head
// size. A dot product of two rows is S partial sums, one per invocation,
// added from shared memory in lane order.
//  PASS 0, forward: per query row i, keys arrive in tiles of BK rows of k
//    and v in shared memory; the row keeps its running max m, sum l and
//    output o (E elements per invocation), rescaled by exp(m_old - m_new)
//    when the max grows. y = o / l.
//  PASS 1, backward for dq: per query row, one pass over its keys for m,
//    l (lse = m + log l) and, rescaled online as o is, the row's
//    sum_j p dy[i].v[j] (dy[i].y[i] computed from p, not from a rounded y);
//    then dq[i] = sum_j ds[i, j] k[j] with p = exp(scale q.k - lse) and
//    ds = scale p (dy[i].v[j] - that sum). Each row's lse and sum go to
//    `stats` for PASS 2.
//  PASS 2, backward for dk and dv: per key row j, query rows i >= j in
//    tiles of q, dy and their stats: dv[j] = sum_i p dy[i],
//    dk[j] = sum_i ds q[i].
// With DROPOUT, each probability p[i, j] that meets v or dy is multiplied by
// its keep factor f (0 or 1 / (1 - p)), DROPOUT_KEYED's at element
// (mat * T + i) * T + j of the probabilities (philox.glsl): o and dv sum
// p f v and p f dy, dp = f dy[i].v[j]; m and l stay the unmasked softmax's.
// Every sum runs in a fixed order (keys or queries ascending), in f32; a
// 16-bit operand is widened on load and an output rounded once at the
// store. Loops over E and S are unrolled: llvmpipe counts every loop
// iteration of an invocation against one limit of 65535 and silently ends
// loops past it, so only the key and tile loops may iterate (the lowering
// checks the count).
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "common.glsl"
#include "io.glsl"
#include "philox.glsl"

layout(constant_id = 1) const uint PASS = 0u;
layout(constant_id = 2) const uint D = 64u;   // head size
layout(constant_id = 3) const uint BK = 16u;  // rows per shared tile
layout(constant_id = 4) const uint E = 16u;   // elements of a row per invocation
// attention_plan.cpp's largest E. Every loop over a row's E elements runs
// EMAX times with the rest skipped (EACH_U): glslc unrolls only loops whose
// trip count it knows, so the register arrays' indices are constants in
// the SPIR-V and nothing is left for the driver to resolve (an index
// NVIDIA's could not resolve put gemm_tiled.comp's array in local memory on
// an H100); the skipped iterations fold away once E is specialized.
const uint EMAX = 16u;
#define EACH_U [[unroll]] for (uint u = 0u; u < EMAX; ++u) if (u < E)
layout(constant_id = 5) const uint S = 4u;    // invocations per row: D / E
layout(constant_id = 6) const uint QB = 32u;  // rows per workgroup (of QB * S)
layout(constant_id = 7) const uint DROPOUT = 0u;  // ATTENTION_DROPOUT and its gradient

KILN_BUFFER(0, out0)  // y, dq or dk
KILN_BUFFER(1, qb)
KILN_BUFFER(2, kb)
KILN_BUFFER(3, vb)
KILN_BUFFER(4, aux)   // PASS 2: dv (written); unused before
KILN_BUFFER(5, dyb)
layout(std430, set = 0, binding = 6) buffer Stats { float stats[]; };  // per row: lse, sum p dy.v
layout(std430, set = 0, binding = 7) buffer Key { uint key[]; };  // DROPOUT: seed, step, offset lo, hi, site

layout(push_constant) uniform Push {
  uint base[8];
  uint T;
  float scale;
  uint mat0;       // the dispatch's first matrix of the node
  uint period;     // DROPOUT: < 2^31 (the host checks)
  uint stride_lo;  // 64-bit
  uint stride_hi;
  uint threshold;  // llround(p * 2^24)
  float keep;      // (float)(1 / (1 - p))
} p;

// Matrix mat's first probability e0 = mat * T * T as dropout_bits takes it:
// (e0 % period, e0 / period low and high words), by long division in 32-bit
// words (no shaderInt64 needed): e0 = hi * 2^32 + lo, period < 2^31.
uvec3 dropout_start(uint mat) {
  uint hi, lo;
  umulExtended(mat, p.T * p.T, hi, lo);
  uint q_hi = hi / p.period, r = hi % p.period, q_lo = 0u;
  [[unroll]] for (int b = 31; b >= 0; --b) {
    r = (r << 1) | ((lo >> uint(b)) & 1u);  // < 2 * period <= 2^32
    if (r >= p.period) {
      r -= p.period;
      q_lo |= 1u << uint(b);
    }
  }
  return uvec3(r, q_lo, q_hi);
}

// The keep factor of probability (i, j) of the matrix whose start is `st`.
float keep_factor(uvec3 st, uint i, uint j) {
  uint kb = p.base[7];
  uint bits = dropout_bits(i * p.T + j, st.x, st.y, st.z, p.period, p.stride_lo, p.stride_hi, key[kb], key[kb + 1u],
                           key[kb + 2u], key[kb + 3u], key[kb + 4u]);
  return (bits >> 8) >= p.threshold ? p.keep : 0.0;
}

// The tiles, [BK][D] floats, are held as vec4s so that where a row's E
// elements start on a multiple of 4 (E and D multiples of 4: VEC) the loops
// over them read a tile 16 bytes at a time: the four components of one
// element, which compilers load as one vector. Scalar reads otherwise.
// Read one float per multiply-add, the tiles made a GPU's shared memory,
// not its arithmetic, the limit of these loops (an estimate: no GPU has
// measured the kernel yet).
shared vec4 tile0[(BK * D + 3u) / 4u];  // k (PASS 0, 1) or q (PASS 2)
shared vec4 tile1[(BK * D + 3u) / 4u];  // v (PASS 0, 1) or dy (PASS 2)
const bool VEC = ((E | D) & 3u) == 0u;  // no &&: glslc makes a branch of it
// Element u of this invocation's E elements of tile row t: one load at
// vec4 (t * D + e0) / 4, offset by the row's start within it (TILE_R), plus
// u. With VEC that offset is 0, so for the unrolled loops' constant u the
// component index is a constant too.
#define TILE_R(t) (VEC ? 0u : ((t) * D + e0) % 4u)
#define TILE(tile, t, u) tile[((t) * D + e0) / 4u + (TILE_R(t) + (u)) / 4u][(TILE_R(t) + (u)) % 4u]
shared float tstat[2 * BK];     // PASS 2: the tile rows' stats
shared vec2 part[QB * BK * S];  // per row, tile row and lane: partial dots
shared float fkeep[QB * BK * DROPOUT + 1u];  // DROPOUT: per row and tile row, the keep factor

// Loads rows [r0, r0 + BK) of matrix `at` (element offset) of two operands
// into the tiles (rows past T as 0), and for PASS 2 their stats.
void load_tiles(uint at, uint r0) {
  barrier();
  for (uint x = gl_LocalInvocationID.x; x < BK * D; x += QB * S) {
    uint r = r0 + x / D, e = x % D;
    bool in_range = r < p.T;
    uint i = at + r * D + e;
    if (PASS == 2u) {
      tile0[x / 4u][x % 4u] = in_range ? qb_ld(p.base[1] + i) : 0.0;
      tile1[x / 4u][x % 4u] = in_range ? dyb_ld(p.base[5] + i) : 0.0;
    } else {
      tile0[x / 4u][x % 4u] = in_range ? kb_ld(p.base[2] + i) : 0.0;
      tile1[x / 4u][x % 4u] = in_range ? vb_ld(p.base[3] + i) : 0.0;
    }
  }
  if (PASS == 2u)
    for (uint x = gl_LocalInvocationID.x; x < 2u * BK; x += QB * S) {
      uint r = r0 + x / 2u;
      tstat[x] = r < p.T ? stats[p.base[6] + 2u * (at / D + r) + x % 2u] : 0.0;
    }
  barrier();
}

void main() {
  uint mat = gl_WorkGroupID.y, at = mat * p.T * D;
  uvec3 st = DROPOUT != 0u ? dropout_start(p.mat0 + mat) : uvec3(0u);
  uint rb = gl_LocalInvocationID.x / S, lane = gl_LocalInvocationID.x % S;
  uint first = gl_WorkGroupID.x * QB;  // the block's first row
  uint r = first + rb;                 // this invocation's row
  bool live = rb < QB && r < p.T;
  uint row = at + r * D + lane * E;    // this invocation's first element
  uint pr = rb * BK * S + lane;        // its partials: part[pr + t * S]
  uint pw = rb * BK * S;               // the row's partials: part[pw + t * S + lane]
  float a[EMAX], b[EMAX], acc[EMAX], acc2[EMAX];
  EACH_U {
    // PASS 0 and 1: a = q[i] (and b = dy[i]); PASS 2: a = k[j], b = v[j].
    a[u] = !live ? 0.0 : PASS == 2u ? kb_ld(p.base[2] + row + u) : qb_ld(p.base[1] + row + u);
    b[u] = !live || PASS == 0u ? 0.0 : PASS == 2u ? vb_ld(p.base[3] + row + u) : dyb_ld(p.base[5] + row + u);
    acc[u] = 0.0;
    acc2[u] = 0.0;
  }
  uint e0 = lane * E;
  if (PASS != 2u) {
    // Keys 0 .. last of the block's rows, in tiles.
    uint keys = min(first + QB, p.T);
    float m = -1.0 / 0.0, l = 0.0, pdp = 0.0, lse = 0.0, dyy = 0.0;
    for (uint sweep = 0u; sweep < (PASS == 1u ? 2u : 1u); ++sweep) {
      if (sweep == 1u) {
        lse = m + log(l);
        dyy = pdp / l;
      }
      for (uint j0 = 0u; j0 < keys; j0 += BK) {
        load_tiles(at, j0);
        uint nt = live && r >= j0 ? min(BK, r + 1u - j0) : 0u;  // this row's keys in the tile
        for (uint t = 0u; t < nt; ++t) {
          float s = 0.0, dp = 0.0;
          EACH_U {
            s = fma(a[u], TILE(tile0, t, u), s);
            if (PASS == 1u) dp = fma(b[u], TILE(tile1, t, u), dp);
          }
          part[pr + t * S] = vec2(s, dp);
        }
        // A row's S invocations draw its keep factors in turn, not each all of them.
        if (DROPOUT != 0u)
          for (uint t = lane; t < nt; t += S) fkeep[rb * BK + t] = keep_factor(st, r, j0 + t);
        barrier();
        for (uint t = 0u; t < nt; ++t) {
          vec2 sd = vec2(0.0);
          for (uint w = 0u; w < S; ++w) sd += part[pw + t * S + w];
          float s = sd.x * p.scale, dp = sd.y, f = 1.0;
          if (DROPOUT != 0u) {
            f = fkeep[rb * BK + t];
            dp *= f;
          }
          if (sweep == 1u) {
            float ds = p.scale * exp(s - lse) * (dp - dyy);
            EACH_U acc[u] = fma(ds, TILE(tile0, t, u), acc[u]);
            continue;
          }
          float mn = max(m, s);
          float c = exp(m - mn), pj = exp(s - mn);
          l = l * c + pj;
          pdp = pdp * c + pj * dp;
          if (PASS == 0u)
            EACH_U acc[u] = acc[u] * c + pj * f * TILE(tile1, t, u);
          m = mn;
        }
      }
    }
    if (!live) return;
    if (PASS == 0u) {
      EACH_U out0_st(p.base[0] + row + u, acc[u] / l);
      return;
    }
    EACH_U out0_st(p.base[0] + row + u, acc[u]);
    if (lane == 0u) {
      stats[p.base[6] + 2u * (mat * p.T + r)] = lse;
      stats[p.base[6] + 2u * (mat * p.T + r) + 1u] = dyy;
    }
    return;
  }
  // PASS 2: key row r against query rows from the block's first key on.
  for (uint i0 = first - first % BK; i0 < p.T; i0 += BK) {
    load_tiles(at, i0);
    uint t0 = live ? max(i0, r) - i0 : BK, t1 = min(BK, p.T - i0);  // this row's queries in the tile
    for (uint t = t0; t < t1; ++t) {
      float s = 0.0, dp = 0.0;
      EACH_U {
        s = fma(TILE(tile0, t, u), a[u], s);
        dp = fma(TILE(tile1, t, u), b[u], dp);
      }
      part[pr + t * S] = vec2(s, dp);
    }
    if (DROPOUT != 0u)
      for (uint t = t0 + lane; t < t1; t += S) fkeep[rb * BK + t] = keep_factor(st, i0 + t, r);
    barrier();
    for (uint t = t0; t < t1; ++t) {
      vec2 sd = vec2(0.0);
      for (uint w = 0u; w < S; ++w) sd += part[pw + t * S + w];
      float pij = exp(sd.x * p.scale - tstat[2u * t]);
      float f = DROPOUT != 0u ? fkeep[rb * BK + t] : 1.0;
      float ds = p.scale * pij * (sd.y * f - tstat[2u * t + 1u]);
      EACH_U {
        acc2[u] = fma(pij * f, TILE(tile1, t, u), acc2[u]);  // dv
        acc[u] = fma(ds, TILE(tile0, t, u), acc[u]);     // dk
      }
    }
  }
  if (live)
    EACH_U {
      out0_st(p.base[0] + row + u, acc[u]);
      aux_st(p.base[4] + row + u, acc2[u]);
    }
}
