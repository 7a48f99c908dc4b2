// Private to the CPU backend's GEMM: the pieces the blocked SGEMM driver
// (gemm.cpp) needs from an ISA-specific kernel set (gemm_avx2.cpp, or the
// portable fallback in gemm.cpp).
//
// Packed layouts (GotoBLAS/BLIS style):
//  - A block (mc x kc of op(A)) is stored as ceil(mc/kMR) micro-panels; each
//    holds, for k = 0..kc-1, kMR consecutive values op(A)(i..i+kMR-1, k).
//    Rows past mc are zero.
//  - B panel (kc x nc of op(B)) is stored as ceil(nc/kNR) micro-panels; each
//    holds, for k = 0..kc-1, kNR consecutive values op(B)(k, j..j+kNR-1).
//    Columns past nc are zero.
// So the micro-kernel always computes a full kMR x kNR tile; only the final
// store is clipped.
#pragma once

#include <cstdint>

#include "kiln/ir.h"

namespace kiln::cpu {
class ThreadPool;
}

namespace kiln::cpu::gemm_detail {

inline constexpr int kMR = 6;   // micro-tile rows (one broadcast each)
inline constexpr int kNR = 16;  // micro-tile columns (two 8-float vectors)

// Packs op(A)(0..mc-1, 0..kc-1). `a` points at op(A)(0, 0): element (i, p) is
// a[i*lda + p] when !trans, a[p*lda + i] when trans. Writes exactly
// ceil(mc/kMR) * kMR * kc floats, so threads may pack neighbouring slices
// of one buffer at once.
using PackAFn = void (*)(bool trans, const float* a, int64_t lda, int64_t mc, int64_t kc, float* dst);
// Packs op(B)(0..kc-1, 0..nc-1). `b` points at op(B)(0, 0): element (p, j) is
// b[p*ldb + j] when !trans, b[j*ldb + p] when trans.
using PackBFn = void (*)(bool trans, const float* b, int64_t ldb, int64_t kc, int64_t nc, float* dst);
// C(0..mc-1, 0..nc-1) = alpha * packedA @ packedB + beta * C, where beta == 0
// means C is overwritten without being read. Walks the micro-tiles.
using MacroKernelFn = void (*)(int64_t mc, int64_t nc, int64_t kc, const float* pa, const float* pb, float* c,
                               int64_t ldc, float alpha, float beta);

struct KernelSet {
  PackAFn pack_a;
  PackBFn pack_b;
  MacroKernelFn macro;
  const char* name;
};

// Defined in gemm_avx2.cpp (compiled with -mavx2 -mfma). Only call after
// checking the CPU supports AVX2 and FMA.
const KernelSet& avx2_kernel_set();

// The portable fallback (gemm.cpp); runs anywhere.
const KernelSet& scalar_kernel_set();

// The kernel set sgemm() uses on this machine (chosen once, on first use).
const KernelSet& active_kernel_set();

// sgemm() with an explicit kernel set, so tests can cover every path the
// machine can run.
void sgemm_with(const KernelSet& ks, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha,
                const float* a, int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc,
                ThreadPool& pool);

// gemm_16bit() with an explicit kernel set and tile size (tests use a small
// tile to cover the blocking of C).
void gemm_16bit_with(const KernelSet& ks, kiln_dtype dtype, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k,
                     const uint16_t* a, int64_t lda, const uint16_t* b, int64_t ldb, uint16_t* c, int64_t ldc,
                     float* tile, int64_t tile_floats, ThreadPool& pool);

}  // namespace kiln::cpu::gemm_detail
