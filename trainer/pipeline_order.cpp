#include "trainer/pipeline_order.h"

#include <algorithm>

namespace kiln::trainer {

namespace {
// The chunk and micro-batch of the interleaved schedule's k-th forward (or backward) pass.
int64_t interleaved_chunk(int64_t k, int64_t P, int64_t vp, bool forward) {
  const int64_t chunk = (k % (P * vp)) / P;
  return forward ? chunk : vp - chunk - 1;
}
int64_t interleaved_micro_batch(int64_t k, int64_t P, int64_t vp) { return (k / (P * vp)) * P + k % P; }
}  // namespace

std::vector<PipelinePass> one_f_one_b_order(int64_t P, int64_t p, int64_t M) {
  const int64_t warmup = std::min(P - p - 1, M);
  std::vector<PipelinePass> order;
  for (int64_t m = 0; m < warmup; ++m) order.push_back({true, m, 0});
  for (int64_t m = 0; m < M - warmup; ++m) {
    order.push_back({true, m + warmup, 0});
    order.push_back({false, m, 0});
  }
  for (int64_t m = M - warmup; m < M; ++m) order.push_back({false, m, 0});
  return order;
}

int64_t interleaved_warmup(int64_t P, int64_t p, int64_t vp, int64_t M) {
  const int64_t total = M * vp;
  if (M == P) return total;  // Megatron: all warm-up when there is a single round
  return std::min((P - p - 1) * 2 + (vp - 1) * P, total);
}

std::vector<PipelinePass> interleaved_order(int64_t P, int64_t p, int64_t vp, int64_t M) {
  const int64_t total = M * vp, warmup = interleaved_warmup(P, p, vp, M);
  std::vector<PipelinePass> order;
  auto forward = [&](int64_t k) {
    order.push_back({true, interleaved_micro_batch(k, P, vp), interleaved_chunk(k, P, vp, true)});
  };
  auto backward = [&](int64_t k) {
    order.push_back({false, interleaved_micro_batch(k, P, vp), interleaved_chunk(k, P, vp, false)});
  };
  for (int64_t k = 0; k < warmup; ++k) forward(k);
  for (int64_t k = 0; k < total - warmup; ++k) {
    forward(k + warmup);
    backward(k);
  }
  for (int64_t k = total - warmup; k < total; ++k) backward(k);
  return order;
}

std::vector<PipelinePass> training_order(int64_t P, int64_t p, int64_t vp, int64_t M) {
  return vp > 1 ? interleaved_order(P, p, vp, M) : one_f_one_b_order(P, p, M);
}

std::vector<PipelinePass> forward_only_order(int64_t vp, int64_t M) {
  std::vector<PipelinePass> order;
  for (int64_t m = 0; m < M; ++m)
    for (int64_t c = 0; c < vp; ++c) order.push_back({true, m, c});
  return order;
}

}  // namespace kiln::trainer
