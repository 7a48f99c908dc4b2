#include "trainer/checkpoint/schedule_check.h"

#include <fmt/format.h>

#include <string>

#include "core/error.h"
#include "core/log.h"
#include "trainer/checkpoint/checkpoint_io.h"
#include "trainer/checkpoint/checkpointer.h"

namespace kiln::trainer {

namespace {

// Megatron's load_state_dict order and the names its messages use.
struct Checked {
  const char* key;
  const char* name;
};
constexpr Checked kChecked[] = {
    {"max_lr", "learning rate"},
    {"min_lr", "minimum learning rate"},
    {"lr_warmup_steps", "warmup iterations"},
    {"lr_decay_steps", "total number of iterations"},
    {"lr_decay_style", "learning rate decay style"},
    {"start_wd", "start weight decay"},
    {"end_wd", "end weight decay"},
    {"wd_incr_steps", "total number of weight decay iterations"},
    {"wd_incr_style", "weight decay incr style"},
};

// The value as Python's str() prints it in Megatron's message (3e-4 is
// "0.0003", 0.1 is "0.1", 1.0 is "1.0").
std::string py_str(const nlohmann::json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  if (v.is_number_float()) {
    std::string s = fmt::format("{}", v.get<double>());
    if (s.find_first_of(".ein") == std::string::npos) s += ".0";
    return s;
  }
  return v.dump();
}

// A checkpoint's step count (samples) as iterations of this run's global batch.
int64_t as_iterations(const nlohmann::json& steps, const char* name, const TrainConfig& cfg) {
  const int64_t samples = steps.get<int64_t>();
  if (samples % cfg.global_batch_size != 0)
    throw Error(
        fmt::format("--use-checkpoint-opt_param-scheduler: the checkpoint's {} ({} samples) is not a whole number of "
                    "iterations of --global-batch-size {}; resume with the checkpoint's global batch size, or use "
                    "--override-opt_param-scheduler",
                    name, samples, cfg.global_batch_size));
  return samples / cfg.global_batch_size;
}

// Megatron's use-checkpoint branch: every value the checkpoint holds wins.
void take_checkpoint_schedule(TrainConfig& cfg, const nlohmann::json& saved) {
  if (saved.contains("max_lr")) cfg.lr = saved["max_lr"].get<double>();
  if (saved.contains("min_lr")) cfg.min_lr = saved["min_lr"].get<double>();
  if (saved.contains("lr_decay_style")) cfg.lr_decay_style = saved["lr_decay_style"].get<std::string>();
  if (saved.contains("lr_warmup_steps"))
    (cfg.sample_based() ? cfg.lr_warmup_samples : cfg.lr_warmup_iters) =
        cfg.sample_based() ? saved["lr_warmup_steps"].get<int64_t>()
                           : as_iterations(saved["lr_warmup_steps"], "warmup iterations", cfg);
  if (saved.contains("lr_decay_steps"))
    (cfg.sample_based() ? cfg.lr_decay_samples : cfg.lr_decay_iters) =
        cfg.sample_based() ? saved["lr_decay_steps"].get<int64_t>()
                           : as_iterations(saved["lr_decay_steps"], "total number of iterations", cfg);
  // kiln's weight decay is constant (start = end); wd_incr_steps and
  // wd_incr_style only shape an increasing one.
  if (saved.contains("end_wd")) cfg.weight_decay = saved["end_wd"].get<double>();
  (void)cfg.lr_schedule();  // throws, naming the flags, if the mix is invalid
}

}  // namespace

nlohmann::json opt_param_scheduler_state(const TrainConfig& cfg, int64_t consumed_samples) {
  const bool samples = cfg.sample_based();
  const int64_t gbs = cfg.global_batch_size;
  return {{"max_lr", cfg.lr},
          {"lr_warmup_steps", samples ? cfg.lr_warmup_samples : cfg.lr_warmup_iters * gbs},
          {"num_steps", consumed_samples},
          {"lr_decay_style", cfg.lr_decay_style},
          {"lr_decay_steps", samples ? cfg.lr_decay_samples : cfg.lr_decay_iters * gbs},
          {"min_lr", cfg.min_lr},
          {"start_wd", cfg.weight_decay},
          {"end_wd", cfg.weight_decay},
          {"wd_incr_style", "constant"},
          {"wd_incr_steps", samples ? cfg.train_samples : cfg.train_iters * gbs}};
}

void check_resume_schedule(TrainConfig& cfg) {
  const bool override_flags = cfg.override_opt_param_scheduler, use_checkpoint = cfg.use_checkpoint_opt_param_scheduler;
  if (override_flags && use_checkpoint)
    throw Error(
        "--override-opt_param-scheduler and --use-checkpoint-opt_param-scheduler exclude each other (Megatron: both "
        "override and use-checkpoint are set.); give one of them");
  // Megatron loads the scheduler with the optimizer, and not under --finetune.
  if (!cfg.resumes() || cfg.finetune || cfg.no_load_optim) return;
  const LoadedCheckpoint ck = load_checkpoint(cfg.load, CheckpointParts::Meta);
  // Megatron fails on the missing optimizer state first; kiln's message for
  // it comes from load_and_check.
  const auto optimizer = ck.meta.find("optimizer");
  if (optimizer != ck.meta.end() && optimizer->is_object() && optimizer->value("state_saved", true) == false) return;
  const auto found = ck.meta.find("opt_param_scheduler");
  if (found == ck.meta.end() || !found->is_object()) return;  // saved by a kiln before the record
  const nlohmann::json& saved = *found;
  check_same_model(ck, cfg);  // a different model or tokenizer is the first thing to hear about
  const nlohmann::json flags = opt_param_scheduler_state(cfg, 0);
  for (const Checked& c : kChecked) {
    if (!saved.contains(c.key)) continue;
    const nlohmann::json &mine = flags[c.key], &theirs = saved[c.key];
    if (override_flags) {
      logger().info(" > overriding {} value to {}", c.name, py_str(mine));
      continue;
    }
    if (!use_checkpoint && mine != theirs)
      throw Error(fmt::format(
          "OptimizerParamScheduler: class input value {} and checkpointvalue {} for {} do not match (checkpoint "
          "{}); pass --override-opt_param-scheduler to use the flags' values, or "
          "--use-checkpoint-opt_param-scheduler to use the checkpoint's",
          py_str(mine), py_str(theirs), c.name, ck.dir));
    // Megatron logs this for every value; kiln only when a flag chose it.
    if (use_checkpoint) logger().info(" > using checkpoint value {} for {}", py_str(theirs), c.name);
  }
  if (use_checkpoint) take_checkpoint_schedule(cfg, saved);
}

}  // namespace kiln::trainer
