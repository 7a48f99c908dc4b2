#include "trainer/checkpoint/checkpointer.h"

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>

#include "core/error.h"
#include "core/log.h"
#include "trainer/checkpoint/model_config.h"
#include "trainer/checkpoint/pipeline_gather.h"
#include "trainer/checkpoint/schedule_check.h"
#include "trainer/checkpoint/tokenizer_record.h"
#include "trainer/report/megatron_log.h"

namespace kiln::trainer {

using Clock = std::chrono::steady_clock;

namespace {

// The dropout seed a checkpoint saved: "rng" (null when saved with
// --no-save-rng), or, in checkpoints of a kiln from before "rng", the run's
// "seed", which its dropout used.
int64_t saved_rng_seed(const LoadedCheckpoint& ck) {
  const nlohmann::json* rng = ck.meta.contains("rng") ? &ck.meta["rng"] : nullptr;
  if (rng && rng->is_object() && rng->contains("dropout_seed") && (*rng)["dropout_seed"].is_number_integer())
    return (*rng)["dropout_seed"].get<int64_t>();
  if (!rng && ck.meta.contains("seed") && ck.meta["seed"].is_number_integer()) return ck.meta["seed"].get<int64_t>();
  throw Error("checkpoint " + ck.dir +
              " has no RNG state (saved with --no-save-rng); pass --no-load-rng or --finetune to start it from --seed");
}

// What --load will restore must be there: a checkpoint saved without
// optimizer or RNG state needs the flag that skips it (Megatron's rule).
void check_restorable(const LoadedCheckpoint& ck, const TrainConfig& cfg) {
  if (cfg.finetune) return;
  if (!cfg.no_load_optim && ck.optimizer.empty())
    throw Error("checkpoint " + ck.dir +
                " has no optimizer state (saved with --no-save-optim); pass --no-load-optim or --finetune");
  if (!cfg.no_load_rng) saved_rng_seed(ck);
}

}  // namespace

LoadedCheckpoint load_and_check(const TrainConfig& cfg) {
  LoadedCheckpoint ck = load_checkpoint(cfg.load);
  check_same_model(ck, cfg);
  check_restorable(ck, cfg);
  return ck;
}

void check_same_model(const LoadedCheckpoint& ck, const TrainConfig& cfg) {
  const ModelArchitecture saved = checkpoint_architecture(ck);
  if (const std::vector<std::string> differ = model_config_differences(saved, cfg.model); !differ.empty()) {
    std::string list;
    for (const std::string& d : differ) list += (list.empty() ? "" : ", ") + d;
    throw Error("checkpoint " + ck.dir + " was saved with a different model: " + list +
                "; pass the model flags of the saving run, or --use-checkpoint-args to take them from it");
  }
  // Same-sized vocabularies of different tokenizers pass the check above
  // and would train on ids that mean other text.
  if (cfg.tokenizer && ck.meta.contains("tokenizer"))
    check_same_tokenizer(ck.meta["tokenizer"], *cfg.tokenizer, ck.dir);
}

Progress resume_from(const LoadedCheckpoint& ck, ModelState& state, const TrainConfig& cfg) {
  state.zero_optimizer();
  state.load_model(ck.model);
  Progress p;
  p.rng_seed = cfg.seed;
  p.loss_scale = initial_loss_scale(cfg.precision);
  if (cfg.finetune) {
    // Megatron's --finetune: the model only; iteration, samples and the
    // optimizer and RNG state start afresh.
    logger().info("finetuning from {} (iteration {}): model loaded, iteration 0", ck.dir, ck.iteration);
    return p;
  }
  p.iteration = ck.iteration;
  p.consumed = meta_integer(ck.meta, "consumed_samples", 0);
  p.skipped_total = meta_integer(ck.meta, "skipped_iterations", 0);
  p.nan_total = meta_integer(ck.meta, "nan_iterations", 0);
  // The counters are trusted from here on (the data position, sums that
  // would overflow), so a crafted or corrupt meta.json stops here: no
  // iteration consumes more than 2^32 samples.
  auto check = [&](const char* key, int64_t v, int64_t most) {
    if (v < 0 || v > most)
      throw Error("checkpoint " + ck.dir + "/meta.json: '" + key + "' is " + std::to_string(v) +
                  ", impossible at iteration " + std::to_string(ck.iteration) + " (expected 0 to " +
                  std::to_string(most) + "); the checkpoint is corrupt, re-save it or point --load at another");
  };
  const int64_t most_samples = ck.iteration > (INT64_MAX >> 32) ? INT64_MAX : ck.iteration << 32;
  check("consumed_samples", p.consumed, most_samples);
  check("skipped_iterations", p.skipped_total, ck.iteration);
  check("nan_iterations", p.nan_total, ck.iteration);
  if (cfg.no_load_optim) {
    p.optimizer_start = ck.iteration;  // fresh moments: bias correction starts over
  } else {
    state.load_optimizer(ck.optimizer);  // there: check_restorable
    // The moments' own step count (older checkpoints: the iteration).
    const nlohmann::json& opt = ck.meta.contains("optimizer") ? ck.meta["optimizer"] : nlohmann::json();
    const int64_t steps = opt.is_object() ? meta_integer(opt, "step", ck.iteration) : ck.iteration;
    check("optimizer.step", steps, ck.iteration);
    p.optimizer_start = ck.iteration - steps;
    // Megatron restores its grad scaler with the optimizer. A checkpoint
    // saved without --fp16 (or before loss scaling) has none: the dynamic
    // scaler then starts afresh, as Megatron does with an old checkpoint.
    if (dynamic_loss_scale(cfg.precision) && opt.is_object() && opt.contains("grad_scaler"))
      p.loss_scale =
          loss_scale_from_json(opt["grad_scaler"], "checkpoint " + ck.dir + "/meta.json optimizer.grad_scaler");
  }
  if (!cfg.no_load_rng) p.rng_seed = saved_rng_seed(ck);
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
  run_.finish_parameter_gather("a checkpoint");
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
                           {"decay_style", cfg.lr_decay_style},
                           {"warmup_samples", cfg.lr_warmup_samples},
                           {"decay_samples", cfg.lr_decay_samples}}},
                         // Megatron's scheduler state, which a resume compares with its flags.
                         {"opt_param_scheduler", opt_param_scheduler_state(cfg, p.consumed)},
                         {"optimizer",
                          {{"type", "adamw"},
                           {"beta1", cfg.adam_beta1},
                           {"beta2", cfg.adam_beta2},
                           {"eps", cfg.adam_eps},
                           {"weight_decay", cfg.weight_decay},
                           {"step", it - p.optimizer_start}}}};
  if (cfg.tokenizer) meta["tokenizer"] = tokenizer_record_json(cfg.tokenizer_spec, *cfg.tokenizer);
  if (cfg.no_save_optim) meta["optimizer"]["state_saved"] = false;
  if (cfg.precision.scales_loss()) meta["optimizer"]["grad_scaler"] = loss_scale_json(p.loss_scale);
  if (!cfg.no_save_optim && !p.fp8.checkpoint_meta().is_null()) meta["optimizer"]["fp8"] = p.fp8.checkpoint_meta();
  meta["rng"] = cfg.no_save_rng ? nlohmann::json() : nlohmann::json{{"dropout_seed", p.rng_seed}};
  auto s0 = Clock::now();
  // Parameters and optimizer state are identical on every data-parallel
  // rank, so rank 0 writes the whole (unsharded) checkpoint, its tensors
  // gathered over its tensor-parallel group (and with pipeline parallelism
  // sent by every later stage); save_checkpoint updates the
  // latest file only once it is durable. The others wait, so nobody exits
  // or moves on before it is.
  //
  // A checkpoint of NaN or infinite weights would be a trap for whoever
  // resumes from it, and would replace the last good one as `latest`: rank 0
  // checks the full tensors, every rank learns the verdict, and all stop.
  const int rank = run_.comm.rank();
  std::string non_finite;
  //
  // With the distributed optimizer each data-parallel rank holds part of the
  // moments: every rank joins their gather (ModelState::save_optimizer).
  if (run_.at.dp_rank != 0 && run_.state->optimizer_sharded() && !cfg.no_save_optim) run_.state->save_optimizer();
  if (run_.at.dp_rank == 0) {
    std::map<std::string, SafeTensor> model_tensors = run_.state->save_model();
    std::map<std::string, SafeTensor> optimizer_tensors;  // none under --no-save-optim (every rank skips the gather)
    if (!cfg.no_save_optim) {
      optimizer_tensors = run_.state->save_optimizer();
      run_.progress.fp8.save(optimizer_tensors);
    }
    // Every stage's full tensors reach the first stage's first rank.
    if (run_.pp_group && run_.at.tp_rank == 0)
      gather_pipeline_stages(cfg, *run_.pp_group, model_tensors, optimizer_tensors);
    if (rank == 0) {
      non_finite = first_non_finite(model_tensors);
      if (non_finite.empty()) save_checkpoint(cfg.save, it, model_tensors, optimizer_tensors, meta);
    }
  }
  const std::vector<uint64_t> verdicts =
      run_.comm.all_gather(non_finite.empty() ? 0 : 1, "checkpoint check at iteration " + std::to_string(it));
  if (verdicts[0] != 0)
    throw Error("not saving the checkpoint at iteration " + std::to_string(it) + ": parameter " +
                (non_finite.empty() ? std::string("(found by rank 0)") : non_finite) +
                " holds NaN or infinite values (training diverged); " + cfg.save +
                " keeps its last good checkpoint. Lower --lr, or set --clip-grad");
  if (rank == 0) {
    std::printf(" [%s] saved checkpoint at iteration %ld to %s (%.2f s)\n", megatron_timestamp().c_str(),
                static_cast<long>(it), cfg.save.c_str(), std::chrono::duration<double>(Clock::now() - s0).count());
    std::fflush(stdout);
  }
  run_.comm.barrier("checkpoint save at iteration " + std::to_string(it));
}

}  // namespace kiln::trainer
