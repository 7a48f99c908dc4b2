// Single-precision GEMM for the CPU backend:
//   C = alpha * op(A) @ op(B) + beta * C
// Row-major. op(A) is M x K, op(B) is K x N, C is M x N with leading
// dimension ldc. lda/ldb are the row strides of A and B as stored (i.e. of
// the un-transposed matrices). Runs across the given pool.
#pragma once

#include <cstdint>

#include "kiln/ir.h"
#include "thread_pool.h"

namespace kiln::cpu {

void sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
           const float* b, int64_t ldb, float beta, float* c, int64_t ldc, ThreadPool& pool);

// C = op(A) @ op(B) with A, B and C all stored as the 16-bit `dtype` (bf16
// or f16) and f32 arithmetic: operands are widened while packed, and C is
// accumulated in f32 a block at a time in `tile` (at least
// gemm_16bit_tile_floats(m, n) floats) and rounded once into C.
void gemm_16bit(kiln_dtype dtype, bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, const uint16_t* a,
                int64_t lda, const uint16_t* b, int64_t ldb, uint16_t* c, int64_t ldc, float* tile, ThreadPool& pool);
int64_t gemm_16bit_tile_floats(int64_t m, int64_t n);

}  // namespace kiln::cpu
