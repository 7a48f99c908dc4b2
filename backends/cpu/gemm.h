// Single-precision GEMM for the CPU backend:
//   C = alpha * op(A) @ op(B) + beta * C
// Row-major. op(A) is M x K, op(B) is K x N, C is M x N with leading
// dimension ldc. lda/ldb are the row strides of A and B as stored (i.e. of
// the un-transposed matrices). Runs across the given pool.
#pragma once

#include <cstdint>

#include "thread_pool.h"

namespace kiln::cpu {

void sgemm(bool trans_a, bool trans_b, int64_t m, int64_t n, int64_t k, float alpha, const float* a, int64_t lda,
           const float* b, int64_t ldb, float beta, float* c, int64_t ldc, ThreadPool& pool);

}  // namespace kiln::cpu
