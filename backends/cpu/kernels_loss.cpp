// CROSS_ENTROPY and CROSS_ENTROPY_GRAD over logits [N, V], numerically stable
// (the row max is subtracted before exp). Targets were range-checked by the
// caller.
#include <cmath>

#include "convert16.h"
#include "kernels.h"

namespace kiln::cpu::KILN_CPU_ISA {

using namespace simd;

void cross_entropy(const Ctx& ctx, const float* logits, const int32_t* targets, float* loss, int64_t rows,
                   int64_t cols) {
  // Per-row losses land in scratch and are summed serially in row order, so
  // the result does not depend on how rows were split.
  double* row_loss = static_cast<double*>(ctx.scratch);
  for_chunks(ctx, rows, grain_for(4 * cols), [&](int64_t, int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* xr = logits + r * cols;
      float m = max_scaled(xr, cols, 1.0f);
      double lse = static_cast<double>(m) + std::log(static_cast<double>(exp_sum(xr, m, cols)));
      row_loss[r] = lse - static_cast<double>(xr[targets[r]]);
    }
  });
  double total = 0.0;
  for (int64_t r = 0; r < rows; ++r) total += row_loss[r];
  loss[0] = static_cast<float>(total / static_cast<double>(rows));
}

// dlogits = dloss / N * (softmax(logits) - onehot(target))
void cross_entropy_grad(const Ctx& ctx, const float* logits, const int32_t* targets, const float* dloss, float* dlogits,
                        int64_t rows, int64_t cols) {
  const float k = static_cast<float>(static_cast<double>(dloss[0]) / static_cast<double>(rows));
  for_chunks(ctx, rows, grain_for(4 * cols), [&](int64_t, int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* xr = logits + r * cols;
      float* dr = dlogits + r * cols;
      float m = max_scaled(xr, cols, 1.0f);
      // One exp per element: store exp(x - m), then rescale in place (the
      // row is still in cache).
      float s = exp_store_sum(xr, 1.0f, m, dr, cols);
      simd::scale(dr, k / s, dr, cols);
      dr[targets[r]] -= k;
    }
  });
}

// bf16/f16 logits (and dlogits): each row is widened into the worker's f32
// row of scratch, computed on exactly as above, and the gradient row rounded
// once into dlogits, so no f32 copy of the [N, V] logits exists.
void cross_entropy_16bit(const Ctx& ctx, kiln_dtype dtype, const uint16_t* logits, const int32_t* targets, float* loss,
                         int64_t rows, int64_t cols) {
  double* row_loss = static_cast<double*>(ctx.scratch);
  float* row_buffers = reinterpret_cast<float*>(row_loss + rows);
  for_chunks(ctx, rows, grain_for(4 * cols), [&](int64_t chunk, int64_t r0, int64_t r1) {
    float* xr = row_buffers + chunk * cols;
    for (int64_t r = r0; r < r1; ++r) {
      widen_row(dtype, logits + r * cols, xr, cols);
      float m = max_scaled(xr, cols, 1.0f);
      double lse = static_cast<double>(m) + std::log(static_cast<double>(exp_sum(xr, m, cols)));
      row_loss[r] = lse - static_cast<double>(xr[targets[r]]);
    }
  });
  double total = 0.0;
  for (int64_t r = 0; r < rows; ++r) total += row_loss[r];
  loss[0] = static_cast<float>(total / static_cast<double>(rows));
}

void cross_entropy_grad_16bit(const Ctx& ctx, kiln_dtype dtype, const uint16_t* logits, const int32_t* targets,
                              const float* dloss, uint16_t* dlogits, int64_t rows, int64_t cols) {
  const float k = static_cast<float>(static_cast<double>(dloss[0]) / static_cast<double>(rows));
  auto* row_buffers = static_cast<float*>(ctx.scratch);
  for_chunks(ctx, rows, grain_for(4 * cols), [&](int64_t chunk, int64_t r0, int64_t r1) {
    float* xr = row_buffers + chunk * 2 * cols;
    float* dr = xr + cols;
    for (int64_t r = r0; r < r1; ++r) {
      widen_row(dtype, logits + r * cols, xr, cols);
      float m = max_scaled(xr, cols, 1.0f);
      float s = exp_store_sum(xr, 1.0f, m, dr, cols);
      simd::scale(dr, k / s, dr, cols);
      dr[targets[r]] -= k;
      narrow_row(dtype, dr, dlogits + r * cols, cols);
    }
  });
}

}  // namespace kiln::cpu::KILN_CPU_ISA
