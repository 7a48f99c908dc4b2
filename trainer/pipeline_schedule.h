// Megatron's non-interleaved 1F1B schedule for one training step of a
// pipeline stage (--pipeline-model-parallel-size; docs/DISTRIBUTED.md).
//
// Stage s of P runs min(P - s - 1, M) warm-up forwards of its M
// micro-batches, then alternates one forward and one backward, then the
// remaining backwards (cool-down). Activations [B*T, C] go to the next
// stage and their gradients back with MPI point-to-point messages; a send
// and the receive that follows it are posted together, so neighbours never
// wait on each other's sends. Each micro-batch's forward precedes its
// backward on every stage, so gradients and losses are those of one process.
//
// A stage before the last keeps only each in-flight micro-batch's input;
// its train step recomputes the forward before the backward (the
// activations inside the stage are never stored between the two).
// With several model chunks per rank (--num-layers-per-virtual-pipeline-stage)
// it hands the step to the interleaved schedule (trainer/interleaved_schedule.h).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "trainer/interleaved_schedule.h"
#include "trainer/overlap_hooks.h"
#include "trainer/setup.h"

namespace kiln::trainer {

class PipelineSchedule {
 public:
  // `prepare(exe, m)` writes micro-batch m's tokens/targets, dropout keys
  // and loss scale to a step graph of this stage.
  using Prepare = std::function<void(graph::Executable&, int64_t)>;
  // `hooks` (trainer/overlap_hooks.h) run with each model chunk's first
  // forward and last backward of a step.
  PipelineSchedule(Setup& run, Prepare prepare, OverlapHooks hooks = {});

  // One step's forwards and backwards; gradients land in the grad.* buffers
  // as without pipelining. Returns the sum of the micro-batch losses on the
  // last stage, 0 on the others.
  double train_step(int64_t iteration);

  // The validation loss sum of micro-batches [0, count) of this rank's
  // evaluation, forward only, prepared by `prepare_eval(exe, i)` (0 except
  // on the last stage).
  double evaluate(int64_t count, const Prepare& prepare_eval);

 private:
  void receive_forward(int64_t m);
  void forward(int64_t m);
  void backward(int64_t m);
  // The messages of a step, each completed before going on.
  void exchange(const std::vector<float>* send, int send_peer, int send_tag, std::vector<float>* receive,
                int receive_peer, int receive_tag, const char* what, int64_t m);

  Setup& run_;
  Prepare prepare_;
  OverlapHooks hooks_;
  dist::Comm& stages_;
  int stage_ = 0, last_ = 0;
  size_t activation_elements_ = 0;
  int64_t iteration_ = 0;
  std::vector<std::vector<float>> inputs_;  // each in-flight micro-batch's received activations
  std::vector<float> output_, grad_output_, grad_input_;
  double loss_sum_ = 0;
  // With vp model chunks per rank, the interleaved schedule does the work.
  std::unique_ptr<InterleavedSchedule> interleaved_;
};

}  // namespace kiln::trainer
