#include "gemm_pack16.h"

#include <algorithm>

#include "convert16.h"
#include "gemm_kernels.h"

namespace kiln::cpu::gemm_detail {

namespace {
// A K block is at most this long (gemm.cpp's kKC); rows of it are widened
// through a stack buffer before being spread over the micro-panel.
constexpr int64_t kMaxRun = 1024;

// Both operands' packings: `count` lines of the operand (A's rows, B's
// columns) go into micro-panels `width` lines wide, each holding for
// k = 0..kc-1 `width` consecutive values (zero past the last line).
// `k_major`: line q's element k is src[k*ld + q], so a panel's values of
// one k are contiguous in memory and widen straight into place; otherwise
// it is src[q*ld + k], one line per q, widened a run at a time.
void pack_panels(kiln_dtype dtype, bool k_major, const uint16_t* src, int64_t ld, int64_t count, int64_t kc,
                 int64_t width, float* dst) {
  float run[kMaxRun];
  for (int64_t i = 0; i < count; i += width, dst += width * kc) {
    const int64_t lines = std::min(width, count - i);
    if (k_major) {
      for (int64_t p = 0; p < kc; ++p) {
        widen_row(dtype, src + p * ld + i, dst + p * width, lines);
        for (int64_t q = lines; q < width; ++q) dst[p * width + q] = 0.0f;
      }
      continue;
    }
    for (int64_t q = 0; q < width; ++q) {
      for (int64_t p0 = 0; p0 < kc; p0 += kMaxRun) {
        const int64_t len = std::min(kMaxRun, kc - p0);
        if (q < lines)
          widen_row(dtype, src + (i + q) * ld + p0, run, len);
        else
          std::fill(run, run + len, 0.0f);
        for (int64_t p = 0; p < len; ++p) dst[(p0 + p) * width + q] = run[p];
      }
    }
  }
}
}  // namespace

// op(A)(i, p) is a[p*lda + i] when transposed, a[i*lda + p] otherwise.
void pack_a_16bit(kiln_dtype dtype, bool trans, const uint16_t* a, int64_t lda, int64_t mc, int64_t kc, float* dst) {
  pack_panels(dtype, trans, a, lda, mc, kc, kMR, dst);
}

// op(B)(p, j) is b[p*ldb + j], or b[j*ldb + p] when transposed.
void pack_b_16bit(kiln_dtype dtype, bool trans, const uint16_t* b, int64_t ldb, int64_t kc, int64_t nc, float* dst) {
  pack_panels(dtype, !trans, b, ldb, nc, kc, kNR, dst);
}

}  // namespace kiln::cpu::gemm_detail
