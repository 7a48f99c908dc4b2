// The order in which a pipeline rank runs the passes of one training step
// (--pipeline-model-parallel-size; docs/DISTRIBUTED.md): pure functions of
// the pipeline's shape, read by the one executor (trainer/pipeline_schedule.h).
//
// Megatron's non-interleaved 1F1B (forward_backward_pipelining_without_
// interleaving in megatron/core/pipeline_parallel/schedules.py): stage p of
// P runs min(P - p - 1, M) warm-up forwards of its M micro-batches, then
// alternates one forward and one backward, then the remaining backwards
// (cool-down).
//
// Megatron's interleaved 1F1B (forward_backward_pipelining_with_
// interleaving), for a rank holding vp model chunks
// (--num-layers-per-virtual-pipeline-stage): M x vp forward and as many
// backward passes. Pass k works on chunk (k mod P vp) / P (backwards: the
// chunks in reverse) and micro-batch (k / (P vp)) x P + k mod P, so
// micro-batches go through the chunks in rounds of P. After
// (P - p - 1) x 2 + (vp - 1) x P warm-up forwards (all of them when M = P)
// it alternates one forward and one backward, then drains the backwards.
#pragma once

#include <cstdint>
#include <vector>

namespace kiln::trainer {

// One forward or backward of one micro-batch through one of the rank's model chunks.
struct PipelinePass {
  bool forward = true;
  int64_t micro_batch = 0, chunk = 0;
  bool operator==(const PipelinePass&) const = default;
};

// Rank p's order under the non-interleaved 1F1B schedule (one chunk).
std::vector<PipelinePass> one_f_one_b_order(int64_t P, int64_t p, int64_t M);

// Rank p's warm-up forwards and order under the interleaved schedule.
int64_t interleaved_warmup(int64_t P, int64_t p, int64_t vp, int64_t M);
std::vector<PipelinePass> interleaved_order(int64_t P, int64_t p, int64_t vp, int64_t M);

// Megatron's choice: the interleaved order with several chunks per rank, 1F1B with one.
std::vector<PipelinePass> training_order(int64_t P, int64_t p, int64_t vp, int64_t M);

// Evaluation: forwards only, each micro-batch through every chunk before the next.
std::vector<PipelinePass> forward_only_order(int64_t vp, int64_t M);

}  // namespace kiln::trainer
