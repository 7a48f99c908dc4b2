// A reader should be able to follow a run from top to bottom in train()
// below, as llm.c's train_gpt2.c: the setup (trainer/setup.h), then per
// iteration one Step (trainer/step.h: micro-batches forward+backward, the
// sums across ranks, grad norm, skip or AdamW), its report
// (trainer/report/reporter.h), evaluation and checkpoint at their intervals
// (trainer/checkpoint/checkpointer.h).
//
// Data parallel (mpirun -np N): each rank runs its share of every global
// batch's micro-batches, then one gradient all-reduce makes every rank's
// gradients (and so its step) identical; a small all-reduce per step
// carries the loss and any save/exit request (trainer/job_control.h).
//
// Tensor parallel (--tensor-model-parallel-size T): the T consecutive ranks
// of a group hold one model replica split Megatron-style (trainer/model/gpt.h),
// see the same micro-batches, and meet in the step graphs' own all-reduce
// nodes; data parallelism then runs over the groups (world = DP x T).
#include "trainer/trainer.h"

#include "core/log.h"
#include "trainer/checkpoint/checkpointer.h"
#include "trainer/dist/parameter_hash.h"
#include "trainer/job_control.h"
#include "trainer/report/reporter.h"
#include "trainer/report/run_profile_report.h"
#include "trainer/setup.h"
#include "trainer/step.h"

namespace kiln::trainer {

int train(const TrainConfig& cfg) { return train(cfg, *dist::make_single_process_comm()); }

int train(const TrainConfig& cfg, dist::Comm& comm) {
  RunProfileReport::prepare(cfg);
  Setup run(cfg, comm);
  Reporter reporter(run);
  JobControl control(cfg, comm.rank());
  Step step(run, control);
  Checkpointer checkpointer(run);

  if (run.progress.iteration >= cfg.train_iters)
    logger().warn(
        "nothing to train: the checkpoint is at iteration {} and --train-iters is {}; raise --train-iters "
        "to train further",
        run.progress.iteration, cfg.train_iters);
  reporter.restart_clock();
  RunProfileReport profile(run);  // --profile: the loop's time, per device
  while (run.progress.iteration < cfg.train_iters) {
    const StepResult result = step.run();
    profile.iteration_done();
    const int64_t iteration = result.iteration;
    reporter.log(result);
    if (run.chunks.front().eval && (iteration % cfg.eval_interval == 0 || iteration == cfg.train_iters))
      reporter.log_validation(iteration, evaluate(run));
    if (cfg.check_weight_hash_interval > 0 && iteration % cfg.check_weight_hash_interval == 0) {
      run.finish_parameter_gather("the weight hash");
      dist::check_parameters_identical(*run.dp_group, *run.state, iteration);
    }
    const bool saved = checkpointer.maybe_save(result.request);
    if (saved) reporter.restart_clock();
    if (result.request.exit) {
      reporter.log_exit(iteration, result.request, saved);
      run.finish_parameter_gather("exit");
      profile.finish();
      return 0;
    }
  }
  run.finish_parameter_gather("the end of training");
  profile.finish();
  control.training_finished(run.progress.iteration);
  return 0;
}

}  // namespace kiln::trainer
