// AVX2/FMA kernels for the CPU backend's SGEMM: packing routines and a 6x16
// register-blocked micro-kernel. Compiled with -mavx2 -mfma; nothing here
// runs until gemm.cpp has checked the CPU supports both.
//
// Micro-kernel: 12 ymm accumulators (6 rows x 2 vectors of 8), two vector
// loads of packed B and six broadcasts of packed A per k step, 12 FMAs.
// That leaves 3 registers for B and the broadcast, keeps 12 independent FMA
// chains in flight (enough for 2 FMA pipes x 4-5 cycles latency) and needs
// 8 loads per 12 FMAs, which the load ports sustain.
//
// Everything here lives in an anonymous namespace and uses no inline
// functions from shared headers: an out-of-line copy of such a function
// compiled with -mavx2 could be the one the linker keeps for the whole
// plugin, and would then run on CPUs without AVX.
#include <immintrin.h>

#include "gemm_kernels.h"

namespace kiln::cpu::gemm_detail {
namespace {

constexpr int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
constexpr int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

// In-register transpose of 8 rows of 8 floats.
inline void transpose8(__m256& r0, __m256& r1, __m256& r2, __m256& r3, __m256& r4, __m256& r5, __m256& r6, __m256& r7) {
  const __m256 t0 = _mm256_unpacklo_ps(r0, r1);
  const __m256 t1 = _mm256_unpackhi_ps(r0, r1);
  const __m256 t2 = _mm256_unpacklo_ps(r2, r3);
  const __m256 t3 = _mm256_unpackhi_ps(r2, r3);
  const __m256 t4 = _mm256_unpacklo_ps(r4, r5);
  const __m256 t5 = _mm256_unpackhi_ps(r4, r5);
  const __m256 t6 = _mm256_unpacklo_ps(r6, r7);
  const __m256 t7 = _mm256_unpackhi_ps(r6, r7);
  const __m256 s0 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 s1 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 s2 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 s3 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 s4 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 s5 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(3, 2, 3, 2));
  const __m256 s6 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(1, 0, 1, 0));
  const __m256 s7 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(3, 2, 3, 2));
  r0 = _mm256_permute2f128_ps(s0, s4, 0x20);
  r1 = _mm256_permute2f128_ps(s1, s5, 0x20);
  r2 = _mm256_permute2f128_ps(s2, s6, 0x20);
  r3 = _mm256_permute2f128_ps(s3, s7, 0x20);
  r4 = _mm256_permute2f128_ps(s0, s4, 0x31);
  r5 = _mm256_permute2f128_ps(s1, s5, 0x31);
  r6 = _mm256_permute2f128_ps(s2, s6, 0x31);
  r7 = _mm256_permute2f128_ps(s3, s7, 0x31);
}

// ---------------------------------------------------------------- packing A

// A not transposed: row i of the micro-panel is a[i*lda + p], contiguous in
// p, so eight k steps of six rows are gathered with an 8x8 transpose (two
// rows zero) and stored 8 floats at a time at stride 6; each store's last two
// floats are overwritten by the next k step's store.
void pack_a_avx2(bool trans, const float* a, int64_t lda, int64_t mc, int64_t kc, float* dst) {
  if (trans) {
    // op(A) row i is column i of the stored matrix, so each k step of a
    // micro-panel is six contiguous floats of stored row p. Walk a few
    // stored rows at a time, contiguously, dealing them out to the panels.
    const int64_t full = mc / kMR * kMR;
    constexpr int64_t kRows = 8;
    int64_t p = 0;
    auto copy6 = [](float* d, const float* s) {
      _mm_storeu_ps(d, _mm_loadu_ps(s));
      _mm_storel_epi64(reinterpret_cast<__m128i*>(d + 4), _mm_loadl_epi64(reinterpret_cast<const __m128i*>(s + 4)));
    };
    for (; p + kRows <= kc; p += kRows) {
      const float* src = a + p * lda;
      float* d = dst + p * kMR;
      for (int64_t i = 0; i < full; i += kMR, d += kMR * kc)
        for (int64_t r = 0; r < kRows; ++r) copy6(d + r * kMR, src + r * lda + i);
    }
    for (; p < kc; ++p) {
      const float* src = a + p * lda;
      float* d = dst + p * kMR;
      for (int64_t i = 0; i < full; i += kMR, d += kMR * kc) copy6(d, src + i);
    }
  }
  for (int64_t i = 0; i < mc; i += kMR, dst += kMR * kc) {
    const int64_t mr = min64(kMR, mc - i);
    if (mr < kMR) {
      for (int64_t p = 0; p < kc; ++p) {
        for (int64_t q = 0; q < mr; ++q) dst[p * kMR + q] = trans ? a[p * lda + i + q] : a[(i + q) * lda + p];
        for (int64_t q = mr; q < kMR; ++q) dst[p * kMR + q] = 0.0f;
      }
      continue;
    }
    if (trans) continue;  // full panels of a transposed A: done above
    const float* r0 = a + (i + 0) * lda;
    const float* r1 = a + (i + 1) * lda;
    const float* r2 = a + (i + 2) * lda;
    const float* r3 = a + (i + 3) * lda;
    const float* r4 = a + (i + 4) * lda;
    const float* r5 = a + (i + 5) * lda;
    int64_t p = 0;
    for (; p + 8 <= kc; p += 8) {
      __m256 x0 = _mm256_loadu_ps(r0 + p), x1 = _mm256_loadu_ps(r1 + p);
      __m256 x2 = _mm256_loadu_ps(r2 + p), x3 = _mm256_loadu_ps(r3 + p);
      __m256 x4 = _mm256_loadu_ps(r4 + p), x5 = _mm256_loadu_ps(r5 + p);
      __m256 x6 = _mm256_setzero_ps(), x7 = _mm256_setzero_ps();
      transpose8(x0, x1, x2, x3, x4, x5, x6, x7);
      float* d = dst + p * kMR;
      _mm256_storeu_ps(d + 0 * kMR, x0);
      _mm256_storeu_ps(d + 1 * kMR, x1);
      _mm256_storeu_ps(d + 2 * kMR, x2);
      _mm256_storeu_ps(d + 3 * kMR, x3);
      _mm256_storeu_ps(d + 4 * kMR, x4);
      _mm256_storeu_ps(d + 5 * kMR, x5);
      _mm256_storeu_ps(d + 6 * kMR, x6);
      if (p + 8 < kc) {
        _mm256_storeu_ps(d + 7 * kMR, x7);
      } else {
        // Last k step of the panel: write exactly six floats, so packing
        // never touches the next panel (threads pack neighbouring panels).
        _mm_storeu_ps(d + 7 * kMR, _mm256_castps256_ps128(x7));
        _mm_storel_pi(reinterpret_cast<__m64*>(d + 7 * kMR + 4), _mm256_extractf128_ps(x7, 1));
      }
    }
    for (; p < kc; ++p) {
      float* d = dst + p * kMR;
      d[0] = r0[p];
      d[1] = r1[p];
      d[2] = r2[p];
      d[3] = r3[p];
      d[4] = r4[p];
      d[5] = r5[p];
    }
  }
}

// ---------------------------------------------------------------- packing B

void pack_b_avx2(bool trans, const float* b, int64_t ldb, int64_t kc, int64_t nc, float* dst) {
  if (!trans) {
    // Full micro-panels: a few rows of B at a time, walking each row
    // contiguously (sequential reads the prefetcher follows) and writing a
    // few consecutive 64-byte lines into every micro-panel.
    const int64_t full = nc / kNR * kNR;
    constexpr int64_t kRows = 8;
    int64_t p = 0;
    for (; p + kRows <= kc; p += kRows) {
      const float* src = b + p * ldb;
      float* d = dst + p * kNR;
      for (int64_t j = 0; j < full; j += kNR, d += kNR * kc) {
        for (int64_t r = 0; r < kRows; ++r) {
          _mm256_store_ps(d + r * kNR, _mm256_loadu_ps(src + r * ldb + j));
          _mm256_store_ps(d + r * kNR + 8, _mm256_loadu_ps(src + r * ldb + j + 8));
        }
      }
    }
    for (; p < kc; ++p) {
      const float* src = b + p * ldb;
      float* d = dst + p * kNR;
      for (int64_t j = 0; j < full; j += kNR, d += kNR * kc) {
        _mm256_store_ps(d, _mm256_loadu_ps(src + j));
        _mm256_store_ps(d + 8, _mm256_loadu_ps(src + j + 8));
      }
    }
  }
  for (int64_t j = 0; j < nc; j += kNR, dst += kNR * kc) {
    const int64_t nr = min64(kNR, nc - j);
    if (nr < kNR) {
      for (int64_t p = 0; p < kc; ++p) {
        for (int64_t q = 0; q < nr; ++q) dst[p * kNR + q] = trans ? b[(j + q) * ldb + p] : b[p * ldb + j + q];
        for (int64_t q = nr; q < kNR; ++q) dst[p * kNR + q] = 0.0f;
      }
      continue;
    }
    if (!trans) continue;  // full panels of a non-transposed B: done above
    // Transposed: column j+q of op(B) is row j+q of the stored matrix.
    const float* src = b + j * ldb;
    int64_t p = 0;
    for (; p + 8 <= kc; p += 8) {
      for (int h = 0; h < 2; ++h) {
        const float* s = src + static_cast<int64_t>(h) * 8 * ldb + p;
        __m256 x0 = _mm256_loadu_ps(s + 0 * ldb), x1 = _mm256_loadu_ps(s + 1 * ldb);
        __m256 x2 = _mm256_loadu_ps(s + 2 * ldb), x3 = _mm256_loadu_ps(s + 3 * ldb);
        __m256 x4 = _mm256_loadu_ps(s + 4 * ldb), x5 = _mm256_loadu_ps(s + 5 * ldb);
        __m256 x6 = _mm256_loadu_ps(s + 6 * ldb), x7 = _mm256_loadu_ps(s + 7 * ldb);
        transpose8(x0, x1, x2, x3, x4, x5, x6, x7);
        float* d = dst + p * kNR + h * 8;
        _mm256_store_ps(d + 0 * kNR, x0);
        _mm256_store_ps(d + 1 * kNR, x1);
        _mm256_store_ps(d + 2 * kNR, x2);
        _mm256_store_ps(d + 3 * kNR, x3);
        _mm256_store_ps(d + 4 * kNR, x4);
        _mm256_store_ps(d + 5 * kNR, x5);
        _mm256_store_ps(d + 6 * kNR, x6);
        _mm256_store_ps(d + 7 * kNR, x7);
      }
    }
    for (; p < kc; ++p)
      for (int q = 0; q < kNR; ++q) dst[p * kNR + q] = src[q * ldb + p];
  }
}

// ------------------------------------------------------------- micro-kernel

// acc(R x 16) = pa(R x kc) @ pb(kc x 16), R <= kMR rows of a packed A
// micro-panel (stride kMR per k step); then C(0..R-1, 0..nr-1) gets
// alpha * acc + beta * C (beta == 0: C not read). R is a template parameter
// so a short last row-tile (m % 6 rows) does only the work it needs.
// pf: a packed B micro-panel to prefetch alongside, one 64-byte k step per
// k step; nullptr for none.
template <int R>
inline void micro_kernel(int64_t kc, const float* pa, const float* pb, float* c, int64_t ldc, float alpha, float beta,
                         int64_t nr, const float* pf) {
  __m256 acc[R][2];
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) acc[r][0] = acc[r][1] = _mm256_setzero_ps();

#define KILN_K_STEP()                                     \
  do {                                                    \
    const __m256 b0 = _mm256_load_ps(pb);                 \
    const __m256 b1 = _mm256_load_ps(pb + 8);             \
    _Pragma("GCC unroll 6") for (int r = 0; r < R; ++r) { \
      const __m256 av = _mm256_broadcast_ss(pa + r);      \
      acc[r][0] = _mm256_fmadd_ps(av, b0, acc[r][0]);     \
      acc[r][1] = _mm256_fmadd_ps(av, b1, acc[r][1]);     \
    }                                                     \
    pa += kMR;                                            \
    pb += kNR;                                            \
  } while (0)

  // Fetch the C tile shortly before the stores need it: early enough to hide
  // an L3 miss, late enough that streaming A and B have not evicted it again.
  const int64_t head = max64(0, kc - 32);
  if (pf != nullptr) {
#pragma GCC unroll 4
    for (int64_t p = 0; p < head; ++p) {
      _mm_prefetch(reinterpret_cast<const char*>(pf + p * kNR), _MM_HINT_T0);
      KILN_K_STEP();
    }
  } else {
#pragma GCC unroll 4
    for (int64_t p = 0; p < head; ++p) KILN_K_STEP();
  }
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) {
    _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(c + r * ldc + kNR - 1), _MM_HINT_T0);
  }
#pragma GCC unroll 4
  for (int64_t p = head; p < kc; ++p) KILN_K_STEP();
#undef KILN_K_STEP

  const __m256 va = _mm256_set1_ps(alpha);
  if (nr == kNR) {
    if (beta == 0.0f) {
#pragma GCC unroll 6
      for (int r = 0; r < R; ++r) {
        _mm256_storeu_ps(c + r * ldc, _mm256_mul_ps(va, acc[r][0]));
        _mm256_storeu_ps(c + r * ldc + 8, _mm256_mul_ps(va, acc[r][1]));
      }
    } else if (beta == 1.0f) {
#pragma GCC unroll 6
      for (int r = 0; r < R; ++r) {
        float* cr = c + r * ldc;
        _mm256_storeu_ps(cr, _mm256_fmadd_ps(va, acc[r][0], _mm256_loadu_ps(cr)));
        _mm256_storeu_ps(cr + 8, _mm256_fmadd_ps(va, acc[r][1], _mm256_loadu_ps(cr + 8)));
      }
    } else {
      const __m256 vb = _mm256_set1_ps(beta);
#pragma GCC unroll 6
      for (int r = 0; r < R; ++r) {
        float* cr = c + r * ldc;
        _mm256_storeu_ps(cr, _mm256_fmadd_ps(va, acc[r][0], _mm256_mul_ps(vb, _mm256_loadu_ps(cr))));
        _mm256_storeu_ps(cr + 8, _mm256_fmadd_ps(va, acc[r][1], _mm256_mul_ps(vb, _mm256_loadu_ps(cr + 8))));
      }
    }
    return;
  }

  // Short column edge: spill, then merge only the valid columns.
  alignas(32) float t[R * kNR];
#pragma GCC unroll 6
  for (int r = 0; r < R; ++r) {
    _mm256_store_ps(t + r * kNR, _mm256_mul_ps(va, acc[r][0]));
    _mm256_store_ps(t + r * kNR + 8, _mm256_mul_ps(va, acc[r][1]));
  }
  for (int r = 0; r < R; ++r) {
    float* cr = c + r * ldc;
    const float* tr = t + r * kNR;
    if (beta == 0.0f) {
      for (int64_t q = 0; q < nr; ++q) cr[q] = tr[q];
    } else {
      for (int64_t q = 0; q < nr; ++q) cr[q] = tr[q] + beta * cr[q];
    }
  }
}

void macro_kernel_avx2(int64_t mc, int64_t nc, int64_t kc, const float* pa, const float* pb, float* c, int64_t ldc,
                       float alpha, float beta) {
  for (int64_t j = 0; j < nc; j += kNR) {
    const int64_t nr = min64(kNR, nc - j);
    const float* bp = pb + j * kc;
    for (int64_t i = 0; i < mc; i += kMR) {
      const int64_t mr = min64(kMR, mc - i);
      // On a column's last row-tile, pull the next B micro-panel in as this
      // one is used up (measured: +2-3% at two threads; prefetching the
      // next A micro-panel as well cost more than it gained).
      const float* pf = i + kMR >= mc && j + kNR < nc ? bp + kNR * kc : nullptr;
      const float* ap = pa + i * kc;
      float* ct = c + i * ldc + j;
      switch (mr) {
        case 6: micro_kernel<6>(kc, ap, bp, ct, ldc, alpha, beta, nr, pf); break;
        case 5: micro_kernel<5>(kc, ap, bp, ct, ldc, alpha, beta, nr, pf); break;
        case 4: micro_kernel<4>(kc, ap, bp, ct, ldc, alpha, beta, nr, pf); break;
        case 3: micro_kernel<3>(kc, ap, bp, ct, ldc, alpha, beta, nr, pf); break;
        case 2: micro_kernel<2>(kc, ap, bp, ct, ldc, alpha, beta, nr, pf); break;
        default: micro_kernel<1>(kc, ap, bp, ct, ldc, alpha, beta, nr, pf); break;
      }
    }
  }
}

constexpr KernelSet kAvx2Set{pack_a_avx2, pack_b_avx2, macro_kernel_avx2, "avx2"};

}  // namespace

const KernelSet& avx2_kernel_set() { return kAvx2Set; }

}  // namespace kiln::cpu::gemm_detail
