// One training iteration, as llm.c's train_gpt2.c reads: forward+backward
// over this rank's micro-batches, the sums across ranks, the gradient norm,
// then either the optimizer or a skip (NaN/Inf).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "trainer/batch_dump.h"
#include "trainer/gradient_dump.h"
#include "trainer/job_control.h"
#include "trainer/pipeline_schedule.h"
#include "trainer/setup.h"

namespace kiln::trainer {

// What one step did, for the reporter and the checkpointer.
struct StepResult {
  int64_t iteration = 0;  // the one just finished, 1-based
  double loss = 0, grad_norm = 0, lr = 0;
  double decoupled_lr = -1;      // --decoupled-lr's rate this step; < 0 without it
  int64_t global_batch = 0;      // samples this step trained on (it follows --rampup-batch-size)
  bool skipped = false;          // non-finite loss or gradients: no optimizer step
  bool nan = false;              // skipped for a non-finite loss or gradients, not an fp16 overflow
  JobControl::Decision request;  // a save or exit asked for by a signal or trigger file
};

class Step {
 public:
  Step(Setup& run, const JobControl& control);
  StepResult run();

 private:
  double forward_backward(double loss_scale);
  // --overlap-grad-reduce applies: more than one data-parallel rank.
  bool overlaps_grad_reduce() const;
  // Backward has written these ports for the last time this step: starts
  // the gradient collectives of the buckets now complete.
  void gradients_final(const std::vector<std::string>& ports);
  // A forward is about to read these ports: writes the parameters among
  // them whose all-gather is still pending, once it has arrived.
  void parameters_needed(const std::vector<std::string>& ports);
  // Writes micro-batch m of this step to a step graph: samples, dropout keys, loss scale.
  // The first sample of this rank's micro-batch m of the step.
  int64_t micro_batch_sample(int64_t m) const;
  void prepare_micro_batch(graph::Executable& exe, int64_t m, float loss_scale);
  // With a tied embedding under pipeline parallelism: the first and last
  // stage's gradients of their copies of the word embedding, summed.
  void sum_tied_embedding_gradient(int64_t iteration);
  void feed_dropout_keys(graph::Executable& train_step, int64_t first_sample);
  // Sums the loss (once per tensor-parallel group) and any save/exit request
  // over all ranks, then the gradients over data-parallel ranks.
  void sum_across_ranks(double loss_sum, StepResult& result);
  double gradient_norm(double loss_scale);
  bool gradients_overflowed(bool finite_here, int64_t iteration);
  void poison_gradient();
  // The skip line: the first non-finite gradient and step-graph value
  // (trainer/step_nonfinite.cpp).
  void report_non_finite(const StepResult& result, double loss_scale);
  void skip(const StepResult& result, bool hopeless);
  void update(const StepResult& result, double loss_scale);

  Setup& run_;
  const JobControl& control_;
  int64_t nan_in_a_row_ = 0;
  std::unique_ptr<GradientDump> dump_;            // KILN_TEST_DUMP_GRADIENTS, null: off
  std::unique_ptr<BatchDump> batch_dump_;         // KILN_TEST_DUMP_BATCHES, null: off
  int64_t overflow_test_iteration_ = 0;           // KILN_TEST_GRAD_OVERFLOW_AT, 0: off
  float loss_scale_ = 1.0f;                       // this step's, for the pipeline's micro-batches
  OverlapHooks hooks_;                            // --overlap-grad-reduce, --overlap-param-gather
  std::string at_iteration_;                      // " at iteration N", for the collectives' messages
  size_t pieces_begun_ = 0, awaited_inside_ = 0;  // this step's forward, for the debug line
  std::unique_ptr<PipelineSchedule> pipeline_;    // --pipeline-model-parallel-size > 1
};

// The mean validation loss over --eval-iters global batches (Megatron's
// meaning), the same on every rank.
double evaluate(Setup& run);

}  // namespace kiln::trainer
