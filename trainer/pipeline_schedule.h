// The one pipeline executor (--pipeline-model-parallel-size;
// docs/DISTRIBUTED.md): it runs a training step or an evaluation as a list
// of passes, each one micro-batch's forward or backward through one of the
// rank's model chunks. Which list is data: Megatron's 1F1B order with one
// chunk per rank, its interleaved order with several
// (--num-layers-per-virtual-pipeline-stage), forwards only for evaluation
// (trainer/pipeline_order.h). Before each pass the rank completes the batch
// of messages the plan puts there (trainer/pipeline_messages.h): the send
// of the previous pass's output and the receives of inputs that have
// arrived. Each micro-batch's forward precedes its backward on every chunk,
// so gradients and losses are those of one process.
//
// Activations [B*T, C] go round the ring of ranks (the last rank's chunk c
// feeds rank 0's chunk c + 1), their gradients the other way, each message
// tagged by the chunk that reads it, so the streams never cross.
//
// A virtual stage before the last keeps only each in-flight micro-batch's
// input; its train step recomputes the forward before the backward (the
// activations inside the stage are never stored between the two). The last
// virtual stage's forward runs inside its train step.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "trainer/overlap_hooks.h"
#include "trainer/pipeline_order.h"
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
  // A pass order with the receives to post before each pass.
  struct Plan {
    std::vector<PipelinePass> order;
    std::vector<std::vector<PipelinePass>> receives;
  };
  Plan plan(const std::function<std::vector<PipelinePass>(int64_t rank)>& order_of) const;
  // Runs `plan`, `run_pass(i)` doing pass i between its messages.
  void execute(const Plan& plan, const std::function<void(size_t)>& run_pass);
  // Posts the send of `sent`'s output (if it has a reader) and the receives
  // of `inputs`, then waits for all of them.
  void exchange(const PipelinePass* sent, const std::vector<PipelinePass>& inputs, const PipelinePass* next);
  void forward(const PipelinePass& pass, bool first);
  void backward(const PipelinePass& pass, bool first, bool last);
  double evaluate_forward(const PipelinePass& pass, const Prepare& prepare_eval);
  bool first_virtual(int64_t chunk) const { return stage_ == 0 && chunk == 0; }
  bool last_virtual(int64_t chunk) const { return stage_ == last_ && chunk == vp_ - 1; }
  std::vector<float>& input(const PipelinePass& pass);
  std::vector<float>& output_gradient(const PipelinePass& pass);

  Setup& run_;
  Prepare prepare_;
  OverlapHooks hooks_;
  dist::Comm& stages_;
  int stage_ = 0, last_ = 0, next_ = 0, previous_ = 0;
  int64_t vp_ = 1;
  size_t activation_elements_ = 0;
  int64_t iteration_ = 0;
  Plan training_;  // for training_micro_batches_ (--rampup-batch-size changes it)
  int64_t training_micro_batches_ = 0;
  // [chunk][micro-batch], each while in flight: received activations, until
  // the backward (the forward alone in evaluation), and output gradients.
  std::vector<std::vector<std::vector<float>>> inputs_, output_gradients_;
  std::vector<float> output_, grad_input_;
  double loss_sum_ = 0;
};

}  // namespace kiln::trainer
