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
#include "trainer/dist/gradient_allreduce.h"
#include "trainer/job_control.h"
#include "trainer/report/reporter.h"
#include "trainer/setup.h"
#include "trainer/step.h"

namespace kiln::trainer {

nlohmann::json model_config_json(const GptConfig& c) {
  return {{"num_layers", c.num_layers},
          {"hidden_size", c.hidden_size},
          {"num_attention_heads", c.num_attention_heads},
          {"vocab_size", c.vocab_size},
          {"seq_length", c.seq_length},
          {"layernorm_epsilon", c.layernorm_epsilon},
          {"init_method_std", c.init_method_std}};
}

int64_t meta_integer(const nlohmann::json& meta, const char* key, int64_t fallback) {
  if (!meta.is_object() || !meta.contains(key)) return fallback;
  const nlohmann::json& v = meta.at(key);
  // Not get<int64_t>() on any number: a float too large for int64_t would be
  // undefined behaviour, and a corrupt meta.json must only cause an error.
  if (!v.is_number_integer())
    throw Error(std::string("checkpoint meta.json: '") + key + "' is " + v.dump() + ", not an integer");
  return v.get<int64_t>();
}

GptConfig model_config_from_json(const nlohmann::json& j) {
  try {
    auto integer = [&](const char* key) {
      const nlohmann::json& v = j.at(key);
      if (!v.is_number_integer())
        throw Error(std::string("checkpoint meta.json has no valid model config ('") + key + "' is " + v.dump() +
                    ", not an integer)");
      return v.get<int64_t>();
    };
    GptConfig c;
    c.num_layers = integer("num_layers");
    c.hidden_size = integer("hidden_size");
    c.num_attention_heads = integer("num_attention_heads");
    c.vocab_size = integer("vocab_size");
    c.seq_length = integer("seq_length");
    c.layernorm_epsilon = j.at("layernorm_epsilon").get<float>();
    c.init_method_std = j.at("init_method_std").get<float>();
    c.validate();
    return c;
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("checkpoint meta.json has no valid model config (") + e.what() + ")");
  }
}

int train(const TrainConfig& cfg) { return train(cfg, *dist::make_single_process_comm()); }

int train(const TrainConfig& cfg, dist::Comm& comm) {
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
  while (run.progress.iteration < cfg.train_iters) {
    const StepResult result = step.run();
    const int64_t iteration = result.iteration;
    reporter.log(result);
    if (run.eval && (iteration % cfg.eval_interval == 0 || iteration == cfg.train_iters))
      reporter.log_validation(iteration, evaluate(run));
    if (cfg.check_weight_hash_interval > 0 && iteration % cfg.check_weight_hash_interval == 0)
      dist::check_parameters_identical(*run.dp_group, *run.state, iteration);
    if (checkpointer.maybe_save(result.request)) reporter.restart_clock();
    if (result.request.exit) {
      reporter.log_exit(iteration, result.request);
      return 0;
    }
  }
  return 0;
}

}  // namespace kiln::trainer
