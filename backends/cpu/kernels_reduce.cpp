// SUM_TO (sum over leading dims, e.g. bias gradients) and SUM_SQUARES
// (gradient norms, accumulated in double; a bf16/f16 x is widened a block at
// a time on the stack, so a bf16 gradient's norm needs no f32 copy of it).
#include <algorithm>
#include <cstring>

#include "convert16.h"
#include "kernels.h"

namespace kiln::cpu::KILN_CPU_ISA {

using namespace simd;

namespace {
inline void accumulate(float* acc, const float* x, int64_t n) {
  if (n < 2 * W) {
    // A padded vector per row would cost more than the adds.
    for (int64_t j = 0; j < n; ++j) acc[j] += x[j];
    return;
  }
  map2(acc, x, acc, n, [](V p, V q) { return p + q; });
}
}  // namespace

// x [rows, cols] -> y [cols]
void sum_to(const Ctx& ctx, const float* x, float* y, int64_t rows, int64_t cols) {
  // Wide: threads own bands of columns and add rows top to bottom, the same
  // order as a serial loop. Narrow (few columns, many rows): threads own
  // bands of rows into scratch partials, combined in chunk order.
  constexpr int64_t kBand = 16;
  const int64_t bands = (cols + kBand - 1) / kBand;
  if (bands >= ctx.threads || rows * cols < 16384) {
    for_chunks(ctx, bands, grain_for(rows * kBand), [&](int64_t, int64_t b0, int64_t b1) {
      const int64_t c0 = b0 * kBand, c1 = b1 * kBand < cols ? b1 * kBand : cols;
      std::memcpy(y + c0, x + c0, static_cast<size_t>(c1 - c0) * sizeof(float));
      for (int64_t r = 1; r < rows; ++r) accumulate(y + c0, x + r * cols + c0, c1 - c0);
    });
    return;
  }
  float* partial = static_cast<float*>(ctx.scratch);  // [chunk][cols]
  int64_t chunks = for_chunks(ctx, rows, grain_for(cols), [&](int64_t c, int64_t r0, int64_t r1) {
    float* acc = partial + c * cols;
    std::memcpy(acc, x + r0 * cols, static_cast<size_t>(cols) * sizeof(float));
    for (int64_t r = r0 + 1; r < r1; ++r) accumulate(acc, x + r * cols, cols);
  });
  std::memcpy(y, partial, static_cast<size_t>(cols) * sizeof(float));
  for (int64_t c = 1; c < chunks; ++c) accumulate(y, partial + c * cols, cols);
}

void sum_squares(const Ctx& ctx, const float* x, float* y, int64_t n) {
  double* partial = static_cast<double*>(ctx.scratch);
  int64_t chunks =
      for_chunks(ctx, n, 32768, [&](int64_t c, int64_t b, int64_t e) { partial[c] = sum_squares_f64(x + b, e - b); });
  double total = 0.0;
  for (int64_t c = 0; c < chunks; ++c) total += partial[c];
  y[0] = static_cast<float>(total);
}

void sum_squares_16bit(const Ctx& ctx, kiln_dtype dtype, const uint16_t* x, float* y, int64_t n) {
  constexpr int64_t kBlock = 1024;
  double* partial = static_cast<double*>(ctx.scratch);
  int64_t chunks = for_chunks(ctx, n, 32768, [&](int64_t c, int64_t b, int64_t e) {
    alignas(64) float block[kBlock];
    double sum = 0.0;
    for (int64_t i = b; i < e; i += kBlock) {
      const int64_t len = std::min(kBlock, e - i);
      widen_row(dtype, x + i, block, len);
      sum += sum_squares_f64(block, len);
    }
    partial[c] = sum;
  });
  double total = 0.0;
  for (int64_t c = 0; c < chunks; ++c) total += partial[c];
  y[0] = static_cast<float>(total);
}

}  // namespace kiln::cpu::KILN_CPU_ISA
