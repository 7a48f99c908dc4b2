// GEMM packing of bf16/f16 operands: the same packed f32 layouts as
// gemm_kernels.h, each value widened as it is packed, so the micro-kernel is
// the f32 one and the 16-bit matrices are never copied whole to f32.
#pragma once

#include <cstdint>

#include "kiln/ir.h"

#pragma GCC visibility push(hidden)

namespace kiln::cpu::gemm_detail {

// As PackAFn / PackBFn, for `a`/`b` stored as the 16-bit `dtype`.
void pack_a_16bit(kiln_dtype dtype, bool trans, const uint16_t* a, int64_t lda, int64_t mc, int64_t kc, float* dst);
void pack_b_16bit(kiln_dtype dtype, bool trans, const uint16_t* b, int64_t ldb, int64_t kc, int64_t nc, float* dst);

}  // namespace kiln::cpu::gemm_detail

#pragma GCC visibility pop
