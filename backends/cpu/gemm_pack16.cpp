#include "gemm_pack16.h"

#include <algorithm>

#include "convert16.h"
#include "gemm_kernels.h"

namespace kiln::cpu::gemm_detail {

namespace {
// A K block is at most this long (gemm.cpp's kKC); rows of it are widened
// through a stack buffer before being spread over the micro-panel.
constexpr int64_t kMaxRun = 1024;
}  // namespace

void pack_a_16bit(kiln_dtype dtype, bool trans, const uint16_t* a, int64_t lda, int64_t mc, int64_t kc, float* dst) {
  float run[kMaxRun];
  for (int64_t i = 0; i < mc; i += kMR, dst += kMR * kc) {
    const int64_t mr = std::min<int64_t>(kMR, mc - i);
    if (trans) {  // op(A)(i+q, p) = a[p*lda + i + q]: mr values per k
      for (int64_t p = 0; p < kc; ++p) {
        widen_row(dtype, a + p * lda + i, dst + p * kMR, mr);
        for (int64_t q = mr; q < kMR; ++q) dst[p * kMR + q] = 0.0f;
      }
      continue;
    }
    for (int64_t q = 0; q < kMR; ++q) {  // op(A)(i+q, p) = a[(i+q)*lda + p]: one row of A per q
      for (int64_t p0 = 0; p0 < kc; p0 += kMaxRun) {
        const int64_t len = std::min(kMaxRun, kc - p0);
        if (q < mr)
          widen_row(dtype, a + (i + q) * lda + p0, run, len);
        else
          std::fill(run, run + len, 0.0f);
        for (int64_t p = 0; p < len; ++p) dst[(p0 + p) * kMR + q] = run[p];
      }
    }
  }
}

void pack_b_16bit(kiln_dtype dtype, bool trans, const uint16_t* b, int64_t ldb, int64_t kc, int64_t nc, float* dst) {
  float run[kMaxRun];
  for (int64_t j = 0; j < nc; j += kNR, dst += kNR * kc) {
    const int64_t nr = std::min<int64_t>(kNR, nc - j);
    if (!trans) {  // op(B)(p, j+q) = b[p*ldb + j + q]: nr values per k, straight into place
      for (int64_t p = 0; p < kc; ++p) {
        widen_row(dtype, b + p * ldb + j, dst + p * kNR, nr);
        for (int64_t q = nr; q < kNR; ++q) dst[p * kNR + q] = 0.0f;
      }
      continue;
    }
    for (int64_t q = 0; q < kNR; ++q) {  // op(B)(p, j+q) = b[(j+q)*ldb + p]: one row of b per q
      for (int64_t p0 = 0; p0 < kc; p0 += kMaxRun) {
        const int64_t len = std::min(kMaxRun, kc - p0);
        if (q < nr)
          widen_row(dtype, b + (j + q) * ldb + p0, run, len);
        else
          std::fill(run, run + len, 0.0f);
        for (int64_t p = 0; p < len; ++p) dst[(p0 + p) * kNR + q] = run[p];
      }
    }
  }
}

}  // namespace kiln::cpu::gemm_detail
