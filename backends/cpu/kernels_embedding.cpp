// EMBEDDING (row gather) and EMBEDDING_GRAD (scatter-add). ids were checked
// against the vocabulary by the caller.
#include <cstring>

#include "kernels.h"

namespace kiln::cpu::KILN_CPU_ISA {

using namespace simd;

void embedding(const Ctx& ctx, const float* table, const int32_t* ids, float* y, int64_t rows, int64_t cols) {
  for_chunks(ctx, rows, grain_for(cols), [&](int64_t, int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r)
      std::memcpy(y + r * cols, table + static_cast<int64_t>(ids[r]) * cols, static_cast<size_t>(cols) * sizeof(float));
  });
}

// Scatter-add without atomics: each thread owns a band of columns and walks
// all ids in order, so every element sums its rows in the same order as a
// serial loop (results do not even depend on the thread count). Narrow
// tables split the vocabulary instead: each thread owns a range of rows and
// skips ids outside it.
void embedding_grad(const Ctx& ctx, const float* dy, const int32_t* ids, float* dtable, int64_t rows, int64_t cols,
                    int64_t vocab) {
  // Zeroing the table is often the bigger job (V x C vs N x C).
  for_chunks(ctx, vocab, grain_for(cols), [&](int64_t, int64_t v0, int64_t v1) {
    std::memset(dtable + v0 * cols, 0, static_cast<size_t>((v1 - v0) * cols) * sizeof(float));
  });
  // Column bands are whole cache lines so threads never share one.
  constexpr int64_t kBand = 16;
  const int64_t bands = (cols + kBand - 1) / kBand;
  if (bands >= ctx.threads || rows * cols < 16384) {
    for_chunks(ctx, bands, grain_for(rows * kBand), [&](int64_t, int64_t b0, int64_t b1) {
      const int64_t c0 = b0 * kBand, c1 = b1 * kBand < cols ? b1 * kBand : cols;
      const int64_t w = c1 - c0;
      for (int64_t r = 0; r < rows; ++r) {
        float* dst = dtable + static_cast<int64_t>(ids[r]) * cols + c0;
        map2(dst, dy + r * cols + c0, dst, w, [](V p, V q) { return p + q; });
      }
    });
    return;
  }
  for_chunks(ctx, vocab, 1, [&](int64_t, int64_t v0, int64_t v1) {
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t id = ids[r];
      if (id < v0 || id >= v1) continue;
      float* dst = dtable + id * cols;
      map2(dst, dy + r * cols, dst, cols, [](V p, V q) { return p + q; });
    }
  });
}

}  // namespace kiln::cpu::KILN_CPU_ISA
