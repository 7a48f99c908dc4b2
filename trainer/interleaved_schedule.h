// Megatron's interleaved 1F1B schedule (forward_backward_pipelining_with_
// interleaving in megatron/core/pipeline_parallel/schedules.py) for one
// training step of a pipeline rank holding vp model chunks
// (--num-layers-per-virtual-pipeline-stage; docs/DISTRIBUTED.md).
//
// The rank runs M x vp forward and as many backward passes. Pass k works on
// chunk (k mod P vp) / P (backwards: the chunks in reverse) and micro-batch
// (k / (P vp)) x P + k mod P, so micro-batches go through the chunks in
// rounds of P. After (P - p - 1) x 2 + (vp - 1) x P warm-up forwards (all
// of them when M = P) it alternates one forward and one backward, then
// drains the backwards. A chunk's activations go to the next rank, the
// last rank's to rank 0's next chunk (a ring); gradients the other way.
// Each message is tagged by its receiving chunk, so the streams cannot
// cross; the sends and receives of one step are posted together, as
// Megatron's batched p2p, so neighbours never wait on each other's sends.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <vector>

#include "trainer/overlap_hooks.h"
#include "trainer/setup.h"

namespace kiln::trainer {

// The pure arithmetic of the schedule, for the schedule and its tests.
int64_t interleaved_warmup(int64_t P, int64_t p, int64_t vp, int64_t M);
int64_t interleaved_chunk(int64_t k, int64_t P, int64_t vp, bool forward);
int64_t interleaved_micro_batch(int64_t k, int64_t P, int64_t vp);
struct PipelinePass {
  bool forward = true;
  int64_t micro_batch = 0, chunk = 0;
  bool operator==(const PipelinePass&) const = default;
};
// The order in which rank p runs its passes.
std::vector<PipelinePass> interleaved_order(int64_t P, int64_t p, int64_t vp, int64_t M);

class InterleavedSchedule {
 public:
  using Prepare = std::function<void(graph::Executable&, int64_t)>;
  // `hooks`: as PipelineSchedule's.
  InterleavedSchedule(Setup& run, Prepare prepare, OverlapHooks hooks = {});

  // As PipelineSchedule::train_step: the loss sum on the last rank.
  double train_step(int64_t iteration);
  // Forward only, micro-batch by micro-batch through every virtual stage.
  double evaluate(int64_t count, const Prepare& prepare_eval);

 private:
  void forward(int64_t k);
  void backward(int64_t k);
  bool first_virtual(int64_t chunk) const { return stage_ == 0 && chunk == 0; }
  bool last_virtual(int64_t chunk) const { return stage_ == last_ && chunk == vp_ - 1; }
  // Posts this step's messages together, then waits for all of them: the
  // forward output of chunk `send_forward` (-1: none), the input gradient
  // of chunk `send_backward`, and receives for chunks `receive_forward`
  // and `receive_backward`.
  void exchange(int64_t send_forward, int64_t send_backward, int64_t receive_forward, int64_t receive_backward,
                int64_t k);

  Setup& run_;
  Prepare prepare_;
  OverlapHooks hooks_;
  dist::Comm& stages_;
  int stage_ = 0, last_ = 0, next_ = 0, previous_ = 0;
  int64_t vp_ = 1, M_ = 0;
  size_t activation_elements_ = 0;
  int64_t iteration_ = 0;
  std::vector<std::vector<std::vector<float>>> inputs_;  // [chunk][micro-batch], while in flight
  std::vector<int64_t> inputs_received_;                 // per chunk
  std::vector<std::deque<std::vector<float>>> grads_;    // per chunk, received output gradients in order
  std::vector<float> output_, grad_input_, receive_activation_, receive_gradient_;
  double loss_sum_ = 0;
};

}  // namespace kiln::trainer
