#include "trainer/checkpoint/checkpointer.h"

#include <chrono>
#include <cstdio>
#include <map>
#include <string>

#include "core/log.h"
#include "trainer/checkpoint/model_config.h"
#include "trainer/report/megatron_log.h"

namespace kiln::trainer {

using Clock = std::chrono::steady_clock;

LoadedCheckpoint load_and_check(const TrainConfig& cfg) {
  LoadedCheckpoint ck = load_checkpoint(cfg.load);
  GptConfig saved = model_config_from_json(ck.meta.contains("config") ? ck.meta["config"] : nlohmann::json());
  if (model_config_json(saved) != model_config_json(cfg.model))
    throw Error("checkpoint " + ck.dir + " was saved with model config " + model_config_json(saved).dump() +
                ", but this run asks for " + model_config_json(cfg.model).dump() +
                "; pass the same model flags as the saving run");
  return ck;
}

Progress resume_from(const LoadedCheckpoint& ck, ModelState& state) {
  state.load_model(ck.model);
  state.load_optimizer(ck.optimizer);
  Progress p;
  p.iteration = ck.iteration;
  p.consumed = meta_integer(ck.meta, "consumed_samples", 0);
  p.skipped_total = meta_integer(ck.meta, "skipped_iterations", 0);
  p.nan_total = meta_integer(ck.meta, "nan_iterations", 0);
  logger().info("resumed from {} at iteration {} ({} consumed samples)", ck.dir, p.iteration, p.consumed);
  return p;
}

bool Checkpointer::maybe_save(const JobControl::Decision& request) {
  const TrainConfig& cfg = run_.cfg;
  const int64_t iteration = run_.progress.iteration;
  const bool scheduled_save =
      (cfg.save_interval > 0 && iteration % cfg.save_interval == 0) || iteration == cfg.train_iters;
  if (cfg.save.empty() || (!scheduled_save && !request.save)) return false;
  // Megatron prints on the last rank only.
  if (run_.comm.is_last_rank() && request.save && !scheduled_save)
    std::printf(" [%s] %s: saving a checkpoint at iteration %ld\n", megatron_timestamp().c_str(),
                request.reason.c_str(), static_cast<long>(iteration));
  save(iteration);
  return true;
}

void Checkpointer::save(int64_t it) {
  const TrainConfig& cfg = run_.cfg;
  const Progress& p = run_.progress;
  nlohmann::json meta = {{"config", model_config_json(cfg.model)},
                         {"iteration", it},
                         {"consumed_samples", p.consumed},
                         {"skipped_iterations", p.skipped_total},
                         {"nan_iterations", p.nan_total},
                         {"seed", cfg.seed},
                         {"data", run_.data->describe()},
                         {"schedule",
                          {{"lr", cfg.lr},
                           {"min_lr", cfg.min_lr},
                           {"warmup_iters", cfg.lr_warmup_iters},
                           {"decay_iters", cfg.lr_decay_iters},
                           {"decay_style", cfg.lr_decay_style}}},
                         {"optimizer",
                          {{"type", "adamw"},
                           {"beta1", cfg.adam_beta1},
                           {"beta2", cfg.adam_beta2},
                           {"eps", cfg.adam_eps},
                           {"weight_decay", cfg.weight_decay},
                           {"step", it}}}};
  auto s0 = Clock::now();
  // Parameters and optimizer state are identical on every data-parallel
  // rank, so rank 0 writes the whole (unsharded) checkpoint, its tensors
  // gathered over its tensor-parallel group; save_checkpoint updates the
  // latest file only once it is durable. The others wait, so nobody exits
  // or moves on before it is.
  const int rank = run_.comm.rank();
  if (run_.at.dp_rank == 0) {
    std::map<std::string, SafeTensor> model_tensors = run_.state->save_model();
    std::map<std::string, SafeTensor> optimizer_tensors = run_.state->save_optimizer();
    if (rank == 0) save_checkpoint(cfg.save, it, model_tensors, optimizer_tensors, meta);
  }
  if (rank == 0) {
    std::printf(" [%s] saved checkpoint at iteration %ld to %s (%.2f s)\n", megatron_timestamp().c_str(),
                static_cast<long>(it), cfg.save.c_str(), std::chrono::duration<double>(Clock::now() - s0).count());
    std::fflush(stdout);
  }
  run_.comm.barrier("checkpoint save at iteration " + std::to_string(it));
}

}  // namespace kiln::trainer
