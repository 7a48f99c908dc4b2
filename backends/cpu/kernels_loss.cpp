// CROSS_ENTROPY and CROSS_ENTROPY_GRAD over logits [N, V], numerically stable
// (the row max is subtracted before exp). Targets were range-checked by the
// caller.
#include <cmath>

#include "convert16.h"
#include "kernels.h"

namespace kiln::cpu::KILN_CPU_ISA {

using namespace simd;

namespace {
// One row's loss: logsumexp(x) - x[target], in double.
double row_loss(const float* xr, int32_t target, int64_t cols) {
  const float m = max_scaled(xr, cols, 1.0f);
  return static_cast<double>(m) + std::log(static_cast<double>(exp_sum(xr, m, cols))) - static_cast<double>(xr[target]);
}

// One row's gradient: k * (softmax(x) - onehot(target)). One exp per
// element: exp(x - m) is stored, then rescaled in place (still in cache).
void row_grad(const float* xr, int32_t target, float k, float* dr, int64_t cols) {
  const float m = max_scaled(xr, cols, 1.0f);
  const float s = exp_store_sum(xr, 1.0f, m, dr, cols);
  simd::scale(dr, k / s, dr, cols);
  dr[target] -= k;
}

// The mean of the per-row losses, summed serially in row order, so the
// result does not depend on how rows were split over workers.
float mean_loss(const double* losses, int64_t rows) {
  double total = 0.0;
  for (int64_t r = 0; r < rows; ++r) total += losses[r];
  return static_cast<float>(total / static_cast<double>(rows));
}

float grad_factor(const float* dloss, int64_t rows) {
  return static_cast<float>(static_cast<double>(dloss[0]) / static_cast<double>(rows));
}
}  // namespace

void cross_entropy(const Ctx& ctx, const float* logits, const int32_t* targets, float* loss, int64_t rows,
                   int64_t cols) {
  auto* losses = static_cast<double*>(ctx.scratch);
  for_chunks(ctx, rows, grain_for(4 * cols), [&](int64_t, int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) losses[r] = row_loss(logits + r * cols, targets[r], cols);
  });
  loss[0] = mean_loss(losses, rows);
}

// dlogits = dloss / N * (softmax(logits) - onehot(target))
void cross_entropy_grad(const Ctx& ctx, const float* logits, const int32_t* targets, const float* dloss, float* dlogits,
                        int64_t rows, int64_t cols) {
  const float k = grad_factor(dloss, rows);
  for_chunks(ctx, rows, grain_for(4 * cols), [&](int64_t, int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) row_grad(logits + r * cols, targets[r], k, dlogits + r * cols, cols);
  });
}

// bf16/f16 logits (and dlogits): each row is widened into the worker's f32
// row of scratch, computed on exactly as above, and the gradient row rounded
// once into dlogits, so no f32 copy of the [N, V] logits exists.
void cross_entropy_16bit(const Ctx& ctx, kiln_dtype dtype, const uint16_t* logits, const int32_t* targets, float* loss,
                         int64_t rows, int64_t cols) {
  auto* losses = static_cast<double*>(ctx.scratch);
  float* row_buffers = reinterpret_cast<float*>(losses + rows);
  for_chunks(ctx, rows, grain_for(4 * cols), [&](int64_t chunk, int64_t r0, int64_t r1) {
    float* xr = row_buffers + chunk * cols;
    for (int64_t r = r0; r < r1; ++r) {
      widen_row(dtype, logits + r * cols, xr, cols);
      losses[r] = row_loss(xr, targets[r], cols);
    }
  });
  loss[0] = mean_loss(losses, rows);
}

void cross_entropy_grad_16bit(const Ctx& ctx, kiln_dtype dtype, const uint16_t* logits, const int32_t* targets,
                              const float* dloss, uint16_t* dlogits, int64_t rows, int64_t cols) {
  const float k = grad_factor(dloss, rows);
  auto* row_buffers = static_cast<float*>(ctx.scratch);
  for_chunks(ctx, rows, grain_for(4 * cols), [&](int64_t chunk, int64_t r0, int64_t r1) {
    float* xr = row_buffers + chunk * 2 * cols;
    float* dr = xr + cols;
    for (int64_t r = r0; r < r1; ++r) {
      widen_row(dtype, logits + r * cols, xr, cols);
      row_grad(xr, targets[r], k, dr, cols);
      narrow_row(dtype, dr, dlogits + r * cols, cols);
    }
  });
}

}  // namespace kiln::cpu::KILN_CPU_ISA
