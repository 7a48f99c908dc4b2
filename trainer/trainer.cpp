// A reader should be able to follow one training step from top to bottom in
// train() below: sample micro-batches, run the fused forward+backward graph
// for each (gradients accumulate on the device), take the global gradient
// norm, skip the step if anything is non-finite, else run AdamW; log, eval
// and checkpoint at their intervals.
//
// Data parallel (mpirun -np N): each rank runs its share of every global
// batch's micro-batches, then one gradient all-reduce makes every rank's
// gradients (and so its step) identical; a small all-reduce per step
// carries the loss and any save/exit request (trainer/job_control.h).
//
// Tensor parallel (--tensor-model-parallel-size T): the T consecutive ranks
// of a group hold one model replica split Megatron-style (trainer/gpt.h),
// see the same micro-batches, and meet in the step graphs' own all-reduce
// nodes; data parallelism then runs over the groups (world = DP x T).
#include "trainer/trainer.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>

#include "core/fallback_device.h"
#include "core/log.h"
#include "core/registry.h"
#include "graph/executor.h"
#include "trainer/checkpoint_io.h"
#include "trainer/dist/gradient_allreduce.h"
#include "trainer/dist/group_collectives.h"
#include "trainer/job_control.h"
#include "trainer/lr_schedule.h"
#include "trainer/megatron_log.h"
#include "trainer/model_state.h"
#include "trainer/run_graphs.h"
#include "trainer/step_graphs.h"
#include "trainer/tensor_parallel.h"
#include "trainer/tensorboard.h"
#include "trainer/token_source.h"

namespace kiln::trainer {

using Clock = std::chrono::steady_clock;

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

namespace {

// Loads --load and checks that it belongs to this model, before any device
// work, so a bad checkpoint fails in milliseconds.
LoadedCheckpoint load_and_check(const TrainConfig& cfg) {
  LoadedCheckpoint ck = load_checkpoint(cfg.load);
  GptConfig saved = model_config_from_json(ck.meta.contains("config") ? ck.meta["config"] : nlohmann::json());
  if (model_config_json(saved) != model_config_json(cfg.model))
    throw Error("checkpoint " + ck.dir + " was saved with model config " + model_config_json(saved).dump() +
                ", but this run asks for " + model_config_json(cfg.model).dump() +
                "; pass the same model flags as the saving run");
  return ck;
}

struct Batch {
  std::vector<int32_t> tokens, targets;
  std::vector<float> token_mask;  // tensor parallelism only
};

// Where this rank sits in the job: world rank = dp_rank x tp + tp_rank
// (Megatron's order: a tensor-parallel group is consecutive ranks).
struct Layout {
  int64_t dp = 1, dp_rank = 0, tp = 1, tp_rank = 0;
};

// Writes a micro-batch to a step graph's inputs, as ids of this rank's
// vocab shard under tensor parallelism.
void feed(graph::Executable& exe, Batch& batch, const GptConfig& model, const Layout& at) {
  if (at.tp > 1) {
    batch.token_mask.resize(batch.tokens.size());
    shard_input_ids(batch.tokens, batch.token_mask, model.local_vocab(), at.tp_rank);
    shard_token_ids(batch.targets, model.local_vocab(), at.tp_rank);
    exe.buffer("token_mask")->write(batch.token_mask.data(), batch.token_mask.size() * 4);
  }
  exe.buffer("tokens")->write(batch.tokens.data(), batch.tokens.size() * 4);
  exe.buffer("targets")->write(batch.targets.data(), batch.targets.size() * 4);
}

// Fills one micro-batch with samples [first, first + B) of a split.
void fill_batch(const TokenSource& data, Split split, int64_t first, int64_t B, int64_t T, Batch& batch) {
  batch.tokens.resize(static_cast<size_t>(B * T));
  batch.targets.resize(static_cast<size_t>(B * T));
  std::vector<int32_t> sample(static_cast<size_t>(T + 1));
  for (int64_t b = 0; b < B; ++b) {
    data.sample(split, first + b, T, sample.data());
    std::copy(sample.begin(), sample.end() - 1, batch.tokens.begin() + b * T);
    std::copy(sample.begin() + 1, sample.end(), batch.targets.begin() + b * T);
  }
}

float read_scalar(graph::Executable& exe, const std::string& port) {
  float v = 0;
  exe.buffer(port)->read(&v, sizeof(v));
  return v;
}

// Each data-parallel rank evaluates its share of eval_iters x DP
// micro-batches (a tensor-parallel group shares its micro-batches and loss,
// counted once).
double evaluate(graph::Executable& eval, const TokenSource& data, const TrainConfig& cfg, Batch& batch,
                dist::Comm& comm, const Layout& at) {
  double sum = 0;
  const int64_t B = cfg.micro_batch_size;
  for (int64_t i = 0; i < cfg.eval_iters; ++i) {
    fill_batch(data, Split::Valid, (i * at.dp + at.dp_rank) * B, B, cfg.model.seq_length, batch);
    feed(eval, batch, cfg.model, at);
    eval.run();
    sum += read_scalar(eval, "loss");
  }
  if (at.tp_rank != 0) sum = 0;
  comm.sum(std::span<double>(&sum, 1), "validation loss all-reduce");
  return sum / static_cast<double>(cfg.eval_iters * at.dp);
}

// The ops a backend lacks run on the cpu backend (graph/executor.h): say
// which, how each step graph is split, and what the copies cost.
struct StepGraph {
  const char* name;
  const graph::Executable* exe;  // may be null (graph not used in this run)
  int64_t runs_per_iteration;
};

// Once per run, so a slow fallback is never silent: a line per op the backend
// lacks ("vulkan: row_max runs on the cpu fallback (2 nodes per iteration)"),
// then the split of each graph and the copies it costs.
void log_split(const std::vector<StepGraph>& graphs) {
  std::map<kiln_op, int64_t> lacks;  // op -> nodes per iteration
  std::string primary, fallback;
  uint64_t per_iteration = 0;
  for (const StepGraph& g : graphs) {
    if (!g.exe || g.exe->split().fallback.empty()) continue;
    const graph::ExecutionSplit& s = g.exe->split();
    for (size_t i = 0; i < s.fallback_ops.size(); ++i)
      lacks[s.fallback_ops[i]] += s.fallback_op_nodes[i] * g.runs_per_iteration;
    primary = s.primary;
    fallback = s.fallback;
    per_iteration += s.bytes_per_run * static_cast<uint64_t>(g.runs_per_iteration);
  }
  if (lacks.empty()) return;
  for (const auto& [op, nodes] : lacks)
    logger().info("{}: {} runs on the {} fallback ({} node{} per iteration)", primary, graph::op_name(op), fallback,
                  nodes, nodes == 1 ? "" : "s");
  for (const StepGraph& g : graphs) {
    if (!g.exe) continue;
    const graph::ExecutionSplit& s = g.exe->split();
    logger().info("split: {}: {} ops on {}, {} on {}, {} segment{}, {:.2f} MiB copied per run", g.name, s.primary_nodes,
                  s.primary, s.fallback_nodes, fallback, s.segments, s.segments == 1 ? "" : "s",
                  static_cast<double>(s.bytes_per_run) / (1 << 20));
  }
  logger().info("split: {:.2f} MiB copied between {} and {} per iteration",
                static_cast<double>(per_iteration) / (1 << 20), primary, fallback);
}

}  // namespace

int train(const TrainConfig& cfg) { return train(cfg, *dist::make_single_process_comm()); }

int train(const TrainConfig& cfg, dist::Comm& comm) {
  const GptConfig& model = cfg.model;
  const int64_t B = cfg.micro_batch_size, T = model.seq_length;
  const int64_t micro_batches = cfg.num_micro_batches();  // per data-parallel rank
  const int64_t rank = comm.rank(), tp = model.tensor_parallel;
  const Layout at{comm.size() / tp, rank / tp, tp, rank % tp};
  const int64_t dp = at.dp;
  // Gradients and losses are summed over every micro-batch of every
  // data-parallel rank.
  const double batch_terms = static_cast<double>(micro_batches * dp);
  if (dp != cfg.data_parallel_size || comm.size() % tp != 0)
    throw Error("internal: data-parallel size " + std::to_string(cfg.data_parallel_size) + " x tensor-parallel " +
                std::to_string(tp) + " but " + std::to_string(comm.size()) + " ranks");
  comm.set_timeout_seconds(cfg.distributed_timeout_minutes * 60.0);
  // The groups: a tensor-parallel group shares a model replica, a
  // data-parallel group the same shard of every replica.
  std::unique_ptr<dist::Comm> tp_owned, dp_owned;
  if (tp > 1) {
    tp_owned = comm.split(static_cast<int>(at.dp_rank), static_cast<int>(at.tp_rank));
    dp_owned = comm.split(static_cast<int>(at.tp_rank), static_cast<int>(at.dp_rank));
  }
  dist::Comm& dp_group = dp_owned ? *dp_owned : comm;
  dist::GroupCollectives tp_collectives(tp_owned ? *tp_owned : comm);

  // ---- everything that can fail on user input, before any real work; the
  // backend and device first, so a typo in them is reported before any
  // dataset index is built
  std::unique_ptr<Device> device =
      Registry::instance().open(cfg.backend, static_cast<int>(cfg.device), static_cast<int>(cfg.num_threads));
  FallbackDevice fallback;  // runs the ops the backend lacks; outlives the executables
  LoadedCheckpoint resume;
  if (!cfg.load.empty()) resume = load_and_check(cfg);
  std::unique_ptr<TokenSource> data = !cfg.data_path.empty() ? make_megatron_data(cfg)
                                      : cfg.mock_data
                                          ? make_mock_data(model.vocab_size, static_cast<uint64_t>(cfg.seed))
                                          : make_embedded_corpus(static_cast<uint64_t>(cfg.seed));
  LrSchedule schedule(cfg.lr, cfg.min_lr, cfg.lr_warmup_iters, cfg.lr_decay_iters, cfg.lr_decay_style);

  // ---- compiled step graphs
  logger().info("backend {} device {}: {}", device->backend(), device->index(), device->properties().name);
  logger().info("model: {} layers, hidden {}, {} heads, seq {}, vocab {}: {:.2f}M parameters", model.num_layers,
                model.hidden_size, model.num_attention_heads, T, model.vocab_size,
                static_cast<double>(parameter_count(model)) / 1e6);
  logger().info("data: {}", data->describe());
  if (dp > 1)
    logger().info("data parallel: {} ranks, {} micro-batch{} of {} per rank per step", dp, micro_batches,
                  micro_batches == 1 ? "" : "es", B);
  if (tp > 1)
    logger().info("tensor parallel: {} ranks per model replica, {} heads and {} vocab rows each", tp,
                  model.local_heads(), model.local_vocab());

  auto t0 = Clock::now();
  // The same list `kiln precompile` extracts (trainer/run_graphs.h).
  RunGraphs graphs = build_run_graphs(cfg);
  // The first micro-batch of a step writes the gradients, later ones add.
  graph::Executable first_micro_batch(*device, graphs.first_micro_batch, &fallback);
  std::unique_ptr<graph::Executable> next_micro_batch;
  if (graphs.next_micro_batch)
    next_micro_batch = std::make_unique<graph::Executable>(*device, *graphs.next_micro_batch, &fallback);
  graph::Executable grad_norm(*device, graphs.grad_norm, &fallback);
  graph::Executable optimizer(*device, graphs.optimizer, &fallback);
  std::unique_ptr<graph::Executable> eval;
  if (graphs.eval) eval = std::make_unique<graph::Executable>(*device, *graphs.eval, &fallback);
  for (graph::Executable* exe : {&first_micro_batch, next_micro_batch.get(), &grad_norm, eval.get()})
    if (exe) exe->set_collectives(&tp_collectives);
  logger().info("compiled {} step graphs in {:.2f} s", 3 + (next_micro_batch ? 1 : 0) + (eval ? 1 : 0),
                std::chrono::duration<double>(Clock::now() - t0).count());
  log_compile_cache_use();
  log_split({{"train step (first micro-batch)", &first_micro_batch, 1},
             {"train step (later micro-batches)", next_micro_batch.get(), micro_batches - 1},
             {"grad norm", &grad_norm, 1},
             {"optimizer", &optimizer, 1},
             {"eval step", eval.get(), 0}});

  // ---- persistent state, resident on the device
  ModelState state(*device, model, /*with_optimizer=*/true, at.tp_rank, tp_owned.get());
  int64_t iteration = 0, consumed = 0, skipped_total = 0, nan_total = 0;
  if (!cfg.load.empty()) {
    state.load_model(resume.model);
    state.load_optimizer(resume.optimizer);
    iteration = resume.iteration;
    consumed = meta_integer(resume.meta, "consumed_samples", 0);
    skipped_total = meta_integer(resume.meta, "skipped_iterations", 0);
    nan_total = meta_integer(resume.meta, "nan_iterations", 0);
    logger().info("resumed from {} at iteration {} ({} consumed samples)", resume.dir, iteration, consumed);
  } else {
    state.initialize(static_cast<uint64_t>(cfg.seed));
  }
  for (graph::Executable* exe : {&first_micro_batch, &grad_norm, &optimizer}) state.bind(*exe);
  if (next_micro_batch) state.bind(*next_micro_batch);
  if (eval) state.bind(*eval);
  dist::GradientAllReduce gradient_allreduce(dp_group, state, cfg.ddp_bucket_size);
  if (dp > 1) logger().info("gradient all-reduce: {} bucket(s)", gradient_allreduce.buckets());

  auto save = [&](int64_t it) {
    nlohmann::json meta = {{"config", model_config_json(model)},
                           {"iteration", it},
                           {"consumed_samples", consumed},
                           {"skipped_iterations", skipped_total},
                           {"nan_iterations", nan_total},
                           {"seed", cfg.seed},
                           {"data", data->describe()},
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
    if (at.dp_rank == 0) {
      std::map<std::string, SafeTensor> model_tensors = state.save_model();
      std::map<std::string, SafeTensor> optimizer_tensors = state.save_optimizer();
      if (rank == 0) save_checkpoint(cfg.save, it, model_tensors, optimizer_tensors, meta);
    }
    if (rank == 0) {
      std::printf(" [%s] saved checkpoint at iteration %ld to %s (%.2f s)\n", megatron_timestamp().c_str(),
                  static_cast<long>(it), cfg.save.c_str(), std::chrono::duration<double>(Clock::now() - s0).count());
      std::fflush(stdout);
    }
    comm.barrier("checkpoint save at iteration " + std::to_string(it));
  };

  // Megatron prints (and so records) on the last rank only.
  const bool reporter = comm.is_last_rank();
  std::unique_ptr<std::ofstream> metrics;
  if (!cfg.metrics_file.empty() && reporter) {
    metrics = std::make_unique<std::ofstream>(cfg.metrics_file, std::ios::app);
    if (!*metrics) throw Error("cannot open --metrics-file " + cfg.metrics_file + " for appending");
  }

  std::unique_ptr<TensorBoardWriter> tensorboard;
  if (!cfg.tensorboard_dir.empty() && reporter) tensorboard = std::make_unique<TensorBoardWriter>(cfg.tensorboard_dir);
  JobControl control(cfg, static_cast<int>(rank));

  // ---- the loop
  Batch batch;
  IntervalStats stats;
  int64_t nan_in_a_row = 0;
  auto interval_start = Clock::now();
  while (iteration < cfg.train_iters) {
    // Forward + backward over this rank's micro-batches; gradients
    // accumulate in place in the grad.* buffers. As Megatron's sampler,
    // micro-batch m of the global batch is samples [m x B x DP, +B x DP),
    // and rank r takes the r-th B of them.
    double loss_sum = 0;
    for (int64_t m = 0; m < micro_batches; ++m) {
      graph::Executable& train_step = m == 0 ? first_micro_batch : *next_micro_batch;
      fill_batch(*data, Split::Train, consumed + (m * dp + at.dp_rank) * B, B, T, batch);
      feed(train_step, batch, model, at);
      train_step.run();
      loss_sum += read_scalar(train_step, "loss");
    }
    // Sum the loss (once per tensor-parallel group) and any save/exit
    // request over all ranks, then the gradients over data-parallel ranks.
    double shared[1 + JobControl::kSlots] = {at.tp_rank == 0 ? loss_sum : 0.0};
    control.local_requests(iteration + 1, std::span<double, JobControl::kSlots>(shared + 1, JobControl::kSlots));
    comm.start_sum(shared);
    gradient_allreduce.start();
    const std::string at_iteration = " at iteration " + std::to_string(iteration + 1);
    comm.wait("loss all-reduce" + at_iteration);
    if (&dp_group != &comm) dp_group.wait("gradient all-reduce" + at_iteration);
    gradient_allreduce.finish();
    const double loss = shared[0] / batch_terms;
    const JobControl::Decision request =
        control.decide(std::span<const double, JobControl::kSlots>(shared + 1, JobControl::kSlots));

    // Gradients were summed over micro-batches: the norm of their mean.
    grad_norm.run();
    const double norm = std::sqrt(static_cast<double>(read_scalar(grad_norm, "grad_sq"))) / batch_terms;
    const double lr = schedule.lr(iteration);

    if (!std::isfinite(loss) || !std::isfinite(norm)) {
      // Skipping needs no clean-up: the next step's first micro-batch
      // overwrites the gradients.
      ++nan_total;
      ++skipped_total;
      ++stats.skipped;
      ++stats.nan;
      if (++nan_in_a_row >= 10)
        throw Error("loss or gradients were NaN/Inf for 10 iterations in a row (last at iteration " +
                    std::to_string(iteration + 1) + "); lower --lr or check the data");
    } else {
      nan_in_a_row = 0;
      const double clip = cfg.clip_grad > 0 && norm > cfg.clip_grad ? cfg.clip_grad / (norm + 1e-6) : 1.0;
      const double step = static_cast<double>(iteration + 1);
      const float hparams[5] = {static_cast<float>(lr), static_cast<float>(cfg.weight_decay),
                                static_cast<float>(1.0 / (1.0 - std::pow(cfg.adam_beta1, step))),
                                static_cast<float>(1.0 / (1.0 - std::pow(cfg.adam_beta2, step))),
                                static_cast<float>(clip / batch_terms)};
      optimizer.buffer("hparams")->write(hparams, sizeof(hparams));
      optimizer.run();
      stats.add(loss, norm);
    }
    ++iteration;
    ++stats.iterations;
    consumed += cfg.global_batch_size;

    if (iteration % cfg.log_interval == 0 || iteration == cfg.train_iters) {
      const double seconds = std::chrono::duration<double>(Clock::now() - interval_start).count();
      IterationLog line;
      line.iteration = iteration;
      line.train_iters = cfg.train_iters;
      line.consumed_samples = consumed;
      line.ms_per_iteration = 1000.0 * seconds / static_cast<double>(stats.iterations);
      line.tokens_per_second = static_cast<double>(stats.iterations * cfg.global_batch_size * T) / seconds;
      line.learning_rate = lr;
      line.global_batch_size = cfg.global_batch_size;
      line.lm_loss = stats.mean_loss();
      line.grad_norm = stats.mean_norm();
      line.skipped = stats.skipped;
      line.nan = stats.nan;
      if (reporter) {
        std::printf("%s\n", format_iteration(line).c_str());
        std::fflush(stdout);
      }
      if (metrics) *metrics << iteration_json(line).dump() << "\n" << std::flush;
      if (tensorboard) tensorboard->add_iteration(line);
      stats = IntervalStats{};
      interval_start = Clock::now();
    }
    if (eval && (iteration % cfg.eval_interval == 0 || iteration == cfg.train_iters)) {
      double vloss = evaluate(*eval, *data, cfg, batch, comm, at);
      if (reporter) {
        std::printf("%s", format_validation(iteration, vloss).c_str());
        std::fflush(stdout);
      }
      if (tensorboard) tensorboard->add_scalar("lm loss validation", vloss, iteration);
      interval_start = Clock::now();  // evaluation time is not iteration time
    }
    if (cfg.check_weight_hash_interval > 0 && iteration % cfg.check_weight_hash_interval == 0)
      dist::check_parameters_identical(dp_group, state, iteration);
    const bool scheduled_save =
        (cfg.save_interval > 0 && iteration % cfg.save_interval == 0) || iteration == cfg.train_iters;
    if (!cfg.save.empty() && (scheduled_save || request.save)) {
      if (reporter && request.save && !scheduled_save)
        std::printf(" [%s] %s: saving a checkpoint at iteration %ld\n", megatron_timestamp().c_str(),
                    request.reason.c_str(), static_cast<long>(iteration));
      save(iteration);
      interval_start = Clock::now();
    }
    if (request.exit) {
      if (reporter) {
        std::printf(" [%s] %s: exiting at iteration %ld %s\n", megatron_timestamp().c_str(), request.reason.c_str(),
                    static_cast<long>(iteration),
                    cfg.save.empty()
                        ? "WITHOUT a checkpoint (no --save given)"
                        : ("with its checkpoint in " + cfg.save + "; resume with --load " + cfg.save).c_str());
        std::fflush(stdout);
      }
      return 0;
    }
  }
  return 0;
}

}  // namespace kiln::trainer
