// Rows of bf16/f16 values widened to f32 and f32 rounded back, for the
// kernels that read and write 16-bit storage themselves (GEMM packing, the
// loss kernels, staging): one conversion per element where it is needed,
// never a whole f32 copy of a tensor. The bits are kiln/half.h's (to nearest
// even, overflow to inf, NaN quieted); F16C does f16 and AVX-512 bf16 when
// the CPU has them, which gives the same bits.
#pragma once

#include <cstdint>

#include "kiln/ir.h"

#pragma GCC visibility push(hidden)

namespace kiln::cpu {

// dst[i] = src[i] as f32, for a 16-bit `dtype`.
void widen_row(kiln_dtype dtype, const uint16_t* src, float* dst, int64_t n);
// dst[i] = src[i] rounded to the 16-bit `dtype`.
void narrow_row(kiln_dtype dtype, const float* src, uint16_t* dst, int64_t n);

// Whether the f16 paths use F16C (chosen once, on first use; for tests).
bool f16c_in_use();

}  // namespace kiln::cpu

#pragma GCC visibility pop
