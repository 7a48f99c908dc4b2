#include "trainer/report/reporter.h"

#include <cstdio>

#include "trainer/report/model_flops.h"

namespace kiln::trainer {

Reporter::Reporter(const Setup& run) : run_(run), prints_(run.comm.is_last_rank()) {
  const TrainConfig& cfg = run.cfg;
  if (!cfg.metrics_file.empty() && prints_) {
    metrics_ = std::make_unique<AppendFile>(cfg.metrics_file, "--metrics-file");
  }
  if (!cfg.tensorboard_dir.empty() && prints_) tensorboard_ = std::make_unique<TensorBoardWriter>(cfg.tensorboard_dir);
}

void Reporter::log(const StepResult& step) {
  const TrainConfig& cfg = run_.cfg;
  if (step.skipped) {
    ++stats_.skipped;
    if (step.nan) ++stats_.nan;
  } else {
    stats_.add(step.loss, step.grad_norm);
  }
  ++stats_.iterations;
  stats_.samples += step.global_batch;
  const int64_t iteration = step.iteration;
  if (iteration % cfg.log_interval != 0 && iteration != cfg.train_iters) return;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - interval_start_).count();
  IterationLog line;
  line.iteration = iteration;
  line.train_iters = cfg.train_iters;
  line.consumed_samples = run_.progress.consumed;
  line.ms_per_iteration = 1000.0 * seconds / static_cast<double>(stats_.iterations);
  line.tokens_per_second = static_cast<double>(stats_.samples * cfg.model.seq_length) / seconds;
  if (cfg.log_throughput)
    line.tflops_per_gpu = megatron_tflops_per_gpu(megatron_iteration_flops(cfg.model, step.global_batch),
                                                  line.ms_per_iteration / 1000.0, run_.comm.size());
  line.learning_rate = step.lr;
  if (step.decoupled_lr >= 0) line.decoupled_learning_rate = step.decoupled_lr;
  line.global_batch_size = step.global_batch;  // Megatron's: the logged step's
  line.lm_loss = stats_.mean_loss();
  line.grad_norm = stats_.mean_norm();
  if (cfg.precision.compute_dtype() != KILN_F32) line.loss_scale = run_.progress.loss_scale.scale;
  line.skipped = stats_.skipped;
  line.nan = stats_.nan;
  if (prints_) {
    std::printf("%s\n", format_iteration(line).c_str());
    std::fflush(stdout);
  }
  if (metrics_) metrics_->append(iteration_json(line).dump() + "\n");
  if (tensorboard_) tensorboard_->add_iteration(line);
  stats_ = IntervalStats{};
  restart_clock();
}

void Reporter::log_validation(int64_t iteration, double loss) {
  if (prints_) {
    std::printf("%s", format_validation(iteration, loss).c_str());
    std::fflush(stdout);
  }
  if (tensorboard_) tensorboard_->add_scalar("lm loss validation", loss, iteration);
  restart_clock();
}

void Reporter::log_exit(int64_t iteration, const JobControl::Decision& request, bool saved) {
  if (!prints_) return;
  const std::string& save = run_.cfg.save;
  const std::string what =
      save.empty() ? "WITHOUT a checkpoint (no --save given)"
      : saved      ? "with its checkpoint in " + save + "; resume with --load " + save
                   : "WITHOUT a checkpoint at this iteration; resume with --load " + save + " from its last one";
  std::printf(" [%s] %s: exiting at iteration %ld %s\n", megatron_timestamp().c_str(), request.reason.c_str(),
              static_cast<long>(iteration), what.c_str());
  std::fflush(stdout);
}

}  // namespace kiln::trainer
