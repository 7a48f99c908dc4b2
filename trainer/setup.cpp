#include "trainer/setup.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>

#include "core/log.h"
#include "core/registry.h"
#include "trainer/checkpoint/checkpointer.h"
#include "trainer/dist/parameter_hash.h"
#include "trainer/model/tensor_parallel.h"

namespace kiln::trainer {

namespace {

using Clock = std::chrono::steady_clock;

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
// ", 1.50 MiB shared in host memory" where the devices share memory (ABI 1.5).
std::string shared_note(uint64_t bytes) {
  return bytes == 0 ? "" : fmt::format(", {:.2f} MiB shared in host memory", static_cast<double>(bytes) / (1 << 20));
}

void log_split(const std::vector<StepGraph>& graphs) {
  std::map<kiln_op, int64_t> lacks;  // op -> nodes per iteration
  std::string primary, fallback;
  uint64_t per_iteration = 0, shared_per_iteration = 0;
  int64_t views = 0;  // RESHAPEs the backend lacks, resolved as views
  for (const StepGraph& g : graphs)
    if (g.exe) views += g.exe->split().aliases * g.runs_per_iteration;
  if (views > 0)
    logger().info("{}: reshape is a view of its input's buffer ({} node{} per iteration; no device runs it)",
                  graphs.front().exe ? graphs.front().exe->split().primary : std::string("the backend"), views,
                  views == 1 ? "" : "s");
  for (const StepGraph& g : graphs) {
    if (!g.exe || g.exe->split().fallback.empty()) continue;
    const graph::ExecutionSplit& s = g.exe->split();
    for (size_t i = 0; i < s.fallback_ops.size(); ++i)
      lacks[s.fallback_ops[i]] += s.fallback_op_nodes[i] * g.runs_per_iteration;
    primary = s.primary;
    fallback = s.fallback;
    per_iteration += s.bytes_per_run * static_cast<uint64_t>(g.runs_per_iteration);
    shared_per_iteration += s.bytes_shared * static_cast<uint64_t>(g.runs_per_iteration);
  }
  if (lacks.empty()) return;
  for (const auto& [op, nodes] : lacks)
    logger().info("{}: {} runs on the {} fallback ({} node{} per iteration)", primary, graph::op_name(op), fallback,
                  nodes, nodes == 1 ? "" : "s");
  for (const StepGraph& g : graphs) {
    if (!g.exe) continue;
    const graph::ExecutionSplit& s = g.exe->split();
    logger().info("split: {}: {} ops on {}, {} on {}, {} segment{}, {:.2f} MiB copied per run{}", g.name,
                  s.primary_nodes, s.primary, s.fallback_nodes, fallback, s.segments, s.segments == 1 ? "" : "s",
                  static_cast<double>(s.bytes_per_run) / (1 << 20), shared_note(s.bytes_shared));
  }
  logger().info("split: {:.2f} MiB copied between {} and {} per iteration{}",
                static_cast<double>(per_iteration) / (1 << 20), primary, fallback, shared_note(shared_per_iteration));
}

// Megatron's lines for the schedule (num_microbatches_calculator.py), so a
// run's log says which batch each stretch of training takes.
void log_step_schedule(const TrainConfig& cfg) {
  const int64_t micro_times_dp = cfg.micro_batch_size * cfg.data_parallel_size;
  logger().info("> using step batch size schedule: {}", cfg.step_schedule.text());
  logger().info("step batch size schedule ({} steps):", cfg.step_schedule.entries().size());
  for (const auto& [threshold, batch] : cfg.step_schedule.entries())
    logger().info("  >= {} tokens ({} samples) -> batch_size={}, num_microbatches={}", threshold * cfg.model.seq_length,
                  threshold, batch, batch / micro_times_dp);
}

}  // namespace

bool has_input(const graph::Executable& exe, const std::string& port) {
  return exe.graph().find_input(port) != nullptr;
}

std::vector<graph::Executable*> ChunkSteps::executables() const {
  std::vector<graph::Executable*> all;
  for (graph::Executable* exe : {first_micro_batch.get(), next_micro_batch.get(), grad_norm.get(), optimizer.get(),
                                 eval.get(), stage_forward.get()})
    if (exe) all.push_back(exe);
  return all;
}

// In the order that reports a user's mistake before any expensive work: the
// groups (every rank takes part), then the backend and device (a typo in
// them fails before any dataset index is built), the checkpoint to resume,
// the data, and only then the compiles and the model state.
Setup::Setup(const TrainConfig& config, dist::Comm& world) : cfg(config), comm(world) {
  global_batch = cfg.global_batch_size;
  micro_batches = cfg.num_micro_batches();
  join_process_groups();
  comm.set_timeout_seconds(cfg.distributed_timeout_minutes * 60.0);
  stage_model = cfg.stage_model(at.pp_rank);

  device = Registry::instance().open(cfg.backend, static_cast<int>(cfg.device), static_cast<int>(cfg.num_threads));
  check_device_stores(*device, cfg.precision);
  attention = choose_attention(cfg.attention_backend, cfg.model, *device);
  LoadedCheckpoint resume;
  if (cfg.resumes()) resume = load_and_check(cfg);
  check_outputs();
  open_data();
  schedule = std::make_unique<LrSchedule>(cfg.lr_schedule());
  if (cfg.decouples_lr()) decoupled_schedule = std::make_unique<LrSchedule>(cfg.decoupled_lr_schedule());

  log_run();
  compile_chunks();
  make_model_state(resume);
  make_gradient_sync();
}

// The rank's coordinates, and one sub-communicator per group of Megatron's:
// the group's index among its kind's is the split colour, the rank's place
// in it the key (so a tensor-parallel group's ranks are in tp_rank order,
// and so on).
void Setup::join_process_groups() {
  const int64_t rank = comm.rank(), tp = cfg.model.tensor_parallel, pp = cfg.pipeline_model_parallel_size;
  const int64_t dp = comm.size() / (tp * pp);
  if (dp != cfg.data_parallel_size || comm.size() % (tp * pp) != 0)
    throw Error("internal: data-parallel size " + std::to_string(cfg.data_parallel_size) + " x tensor-parallel " +
                std::to_string(tp) + " x pipeline-parallel " + std::to_string(pp) + " but " +
                std::to_string(comm.size()) + " ranks");
  const ParallelState parallel = job_parallel_state(comm.size(), tp, pp);
  at = rank_layout(parallel, rank);
  batch_terms = cfg.weighs_tokens_globally() ? 1.0 : static_cast<double>(micro_batches * dp);
  auto split = [&](const std::string& token) {
    return comm.split(static_cast<int>(parallel.group_index(token, rank)),
                      static_cast<int>(parallel.rank_in_group(token, rank)));
  };
  if (tp > 1 || pp > 1) {
    tp_owned = split("tp");
    dp_owned = split("dp");
  }
  if (pp > 1) {
    pp_group = split("pp");
    // The tied embedding's group is the first and last stages of a pipeline
    // group. Middle stages each take a colour past every pipeline group's and
    // form a group of their own, which they never use.
    const bool holds_tied = !cfg.model.untie_embeddings_and_output_weights && (at.first_stage() || at.last_stage());
    const int64_t pp_groups = static_cast<int64_t>(parallel.groups("pp").size());
    embedding_group = comm.split(static_cast<int>(holds_tied ? parallel.group_index("pp", rank) : pp_groups + rank),
                                 static_cast<int>(at.pp_rank));
    if (!holds_tied) embedding_group.reset();
  }
  dp_group = dp_owned ? dp_owned.get() : &comm;
  name_process_groups(parallel);
}

// Each dimension's communicator under the kiln_group of its name (the op
// table and ParallelState share the names), for the graphs' collectives.
void Setup::name_process_groups(const ParallelState& parallel) {
  for (const ParallelDim& dim : parallel.dims()) {
    int group = 0;
    while (group < KILN_GROUP_COUNT_ && dim.name != kiln_group_name(group)) ++group;
    if (group == KILN_GROUP_COUNT_) throw Error("internal: parallel dimension '" + dim.name + "' is no kiln_group");
    struct Known {
      const char* name;
      dist::Comm* comm;
      const char* what;
    };
    const Known known[] = {{"tp", tp_owned.get(), "tensor-parallel"},
                           {"dp", dp_group, "data-parallel"},
                           {"pp", pp_group.get(), "pipeline-parallel"}};
    const Known* over = nullptr;
    for (const Known& k : known)
      if (dim.name == k.name && k.comm != nullptr) over = &k;
    if (dim.size == 1)
      group_collectives.push_back(std::make_unique<graph::SelfGroup>());
    else if (over != nullptr)
      group_collectives.push_back(std::make_unique<dist::GroupCollectives>(*over->comm, over->what));
    else
      throw Error("internal: no communicator for the '" + dim.name + "' dimension of size " + std::to_string(dim.size));
    process_groups.set(static_cast<kiln_group>(group), group_collectives.back().get());
  }
}

// Rank 0: --save is usable and this run is its only writer; Megatron's
// lines for a missing --load and the padded vocabulary, which log parsers know.
void Setup::check_outputs() {
  if (cfg.load_missing && comm.is_last_rank()) {
    // checkpointing.py's two lines.
    std::printf("WARNING: could not find the metadata file %s \n",
                (std::filesystem::path(cfg.load) / kLatestFileName).string().c_str());
    std::printf("    will not load any checkpoints and will start from random\n");
    std::fflush(stdout);
  }
  if (!cfg.save.empty() && comm.rank() == 0) {
    check_save_dir(cfg.save);
    save_lock = SaveDirLock::take(cfg.save);
  }
  if (cfg.tokenizer && comm.rank() == 0) {
    // _vocab_size_with_padding's line.
    const int64_t size = cfg.tokenizer->vocab_size();
    std::printf(" > padded vocab (size: %lld) with %lld dummy tokens (new size: %lld)\n", static_cast<long long>(size),
                static_cast<long long>(cfg.model.vocab_size - size), static_cast<long long>(cfg.model.vocab_size));
    std::fflush(stdout);
  }
}

void Setup::open_data() {
  // Mock tokens come from the tokenizer's ids, never the padding rows.
  const int64_t mock_vocab = cfg.tokenizer ? cfg.tokenizer->vocab_size() : cfg.model.vocab_size;
  data = !cfg.data_path.empty() ? make_megatron_data(cfg)
         : cfg.mock_data        ? make_mock_data(mock_vocab, static_cast<uint64_t>(cfg.seed))
                                : make_embedded_corpus(static_cast<uint64_t>(cfg.seed));
  if (uses_documents(cfg.model))
    batch.documents = std::make_shared<const DocumentInputs>(cfg.model, cfg.tokenizer ? cfg.tokenizer->eod() : -1);
}

// What runs where: device, model, data and each parallel dimension.
void Setup::log_run() const {
  const GptConfig& model = cfg.model;
  const int64_t pp = at.pp;
  logger().info("backend {} device {}: {} (plugin {}, {})", device->backend(), device->index(),
                device->properties().name, device->plugin().path, device->plugin().binary_identity());
  logger().info("model: {} layers, hidden {}, {} heads, seq {}, vocab {}: {:.2f}M parameters", model.num_layers,
                model.hidden_size, model.num_attention_heads, model.seq_length, model.vocab_size,
                static_cast<double>(parameter_count(model)) / 1e6);
  if (attention.warn)
    logger().warn("{}", attention.line);
  else
    logger().info("{}", attention.line);
  logger().info("data: {}", data->describe());
  if (uses_documents(model)) {
    std::string what;
    for (const auto& [on, part] : {std::pair{model.reset_position_ids, "positions restart after each EOD"},
                                   std::pair{model.reset_attention_mask, "attention stays within each document"},
                                   std::pair{model.eod_mask_loss, "no loss where the input is EOD"}})
      if (on) what += (what.empty() ? "" : "; ") + std::string(part);
    logger().info("documents (EOD id {}): {}", cfg.tokenizer ? cfg.tokenizer->eod() : -1, what);
  }
  if (cfg.weighs_tokens_globally())
    logger().info("--calculate-per-token-loss: each token's loss weighs 1 / the global batch's kept tokens");
  else if (cfg.calculate_per_token_loss)
    logger().info(
        "--calculate-per-token-loss: every token counts (no --eod-mask-loss), so the token mean over the global "
        "batch is the mean of the micro-batch means kiln computes");
  if (cfg.rampup.active())  // Megatron's line (num_microbatches_calculator.py)
    logger().info(
        "will use batch size rampup starting from global batch size {} to global batch size {} with batch size "
        "increments {} over {} samples.",
        cfg.rampup.start(), cfg.global_batch_size, cfg.rampup.increment(), cfg.rampup.samples());
  if (cfg.step_schedule.active()) log_step_schedule(cfg);
  if (at.dp > 1)
    logger().info("data parallel: {} ranks, {} micro-batch{} of {} per rank per step", at.dp, micro_batches,
                  micro_batches == 1 ? "" : "es", cfg.micro_batch_size);
  if (at.tp > 1)
    logger().info("tensor parallel: {} ranks per model replica, {} heads and {} vocab rows each", at.tp,
                  model.local_heads(), model.local_vocab());
  if (pp > 1) {
    std::string split;  // layers per stage, first to last
    for (int64_t s = 0; s < pp; ++s) {
      if (s > 0) split += "+";
      split += std::to_string(cfg.stage_layers(s));
    }
    if (cfg.virtual_chunks() > 1) {
      const int64_t per_chunk = model.num_layers / (pp * cfg.virtual_chunks());
      logger().info(
          "pipeline parallel: {} stages of {} model chunks of {} layer{} each, interleaved 1F1B over {} "
          "micro-batches",
          pp, cfg.virtual_chunks(), per_chunk, per_chunk == 1 ? "" : "s", micro_batches);
    } else {
      logger().info("pipeline parallel: {} stages of {} layers, 1F1B over {} micro-batch{}", pp, split, micro_batches,
                    micro_batches == 1 ? "" : "es");
    }
  }
}

// The rank's step graphs (the list `kiln precompile` extracts), compiled per
// model chunk, and where a backend that lacks ops splits them.
void Setup::compile_chunks() {
  const auto t0 = Clock::now();
  graphs = std::make_unique<const RunGraphs>(build_rank_graphs(cfg, at, attention.fused));
  const std::vector<GptConfig> chunk_models = cfg.stage_chunks(at.pp_rank);
  int compiled = 0;
  std::string chunk_suffix;  // names a graph by its model chunk when a rank holds several
  auto compile = [&](const graph::Graph& graph, const std::string& name) {
    ++compiled;
    auto exe = std::make_unique<graph::Executable>(*device, graph, &fallback);
    exe->set_name(name + chunk_suffix);  // the --profile table's graph column
    return exe;
  };
  std::vector<StepGraph> split_graphs;
  for (size_t c = 0; c < chunk_models.size(); ++c) {
    const RunGraphs& g = c == 0 ? *graphs : graphs->later_chunks[c - 1];
    ChunkSteps& chunk = chunks.emplace_back();
    chunk.model = chunk_models[c];
    if (chunk_models.size() > 1) chunk_suffix = " (chunk " + std::to_string(c) + ")";
    chunk.first_micro_batch = compile(g.first_micro_batch, "first micro-batch");
    if (g.next_micro_batch) chunk.next_micro_batch = compile(*g.next_micro_batch, "later micro-batches");
    chunk.grad_norm = compile(g.grad_norm, "grad norm");
    chunk.optimizer = compile(g.optimizer, "optimizer");
    if (g.eval) chunk.eval = compile(*g.eval, "eval");
    if (g.stage_forward) chunk.stage_forward = compile(*g.stage_forward, "stage forward");
    for (graph::Executable* exe : chunk.executables()) exe->set_process_groups(&process_groups);
    split_graphs.push_back({"train step (first micro-batch)", chunk.first_micro_batch.get(), 1});
    split_graphs.push_back({"train step (later micro-batches)", chunk.next_micro_batch.get(), micro_batches - 1});
    split_graphs.push_back({"grad norm", chunk.grad_norm.get(), 1});
    split_graphs.push_back({"optimizer", chunk.optimizer.get(), 1});
    split_graphs.push_back({"eval step", chunk.eval.get(), 0});
  }
  logger().info("compiled {} step graphs in {:.2f} s", compiled,
                std::chrono::duration<double>(Clock::now() - t0).count());
  log_compile_cache_use();
  log_split(split_graphs);
}

// Every chunk's parameters in one state, resident on the device: to the
// optimizer, the gradient reductions and checkpoints they are just this
// rank's layers. Fresh, or from the checkpoint checked at the start.
void Setup::make_model_state(const LoadedCheckpoint& resume) {
  std::vector<ParamSpec> params;
  for (const ChunkSteps& chunk : chunks)
    for (ParamSpec& p : gpt_parameters(chunk.model)) params.push_back(std::move(p));
  state = std::make_unique<ModelState>(*device, stage_model, std::move(params), /*with_optimizer=*/true, at.tp_rank,
                                       tp_owned.get(), cfg.shards_optimizer() ? dp_group : nullptr);
  // Measured from the buffers allocated, so the saving is visible in the log.
  logger().info("optimizer state: {} bytes of AdamW moments on this rank{}", state->moment_bytes(),
                cfg.shards_optimizer()
                    ? ", sharded over " + std::to_string(at.dp) + " data-parallel ranks (--use-distributed-optimizer)"
                    : std::string());
  progress.rng_seed = cfg.seed;
  progress.loss_scale = initial_loss_scale(cfg.precision);
  if (cfg.resumes())
    progress = resume_from(resume, *state, cfg);
  else
    state->initialize(static_cast<uint64_t>(cfg.seed));
  std::vector<GptConfig> chunk_models;
  for (const ChunkSteps& chunk : chunks) chunk_models.push_back(chunk.model);
  progress.fp8 = Fp8State(cfg.precision, chunk_models);
  if (cfg.resumes() && !cfg.finetune && !cfg.no_load_optim)
    progress.fp8.load(resume.optimizer, resume.dir + "/optimizer.safetensors");
  if (progress.fp8.enabled()) {
    logger().info("{}", progress.fp8.describe(cfg.precision));
    // No in-tree backend has FP8 matrix units: the casts round to FP8 values
    // held in the compute dtype, which the GEMMs multiply with f32 sums.
    logger().info("FP8: the {} backend has no FP8 units: FP8 values are computed and multiplied in {}",
                  device->backend(), kiln_dtype_name(cfg.model.compute_dtype));
    if (cfg.precision.fp8_interval != 1)
      logger().warn(
          "--fp8-interval {} ignored (deprecated in Transformer Engine): kiln updates FP8 scales every "
          "iteration",
          cfg.precision.fp8_interval);
  }
  for (const ChunkSteps& chunk : chunks)
    for (graph::Executable* exe : chunk.executables()) state->bind(*exe);
  if (at.dp > 1) dist::check_parameters_identical(*dp_group, *state, progress.iteration, /*at_start=*/true);
}

// The data-parallel gradient synchronisation: the all-reduce, or the
// distributed optimizer's reduce-scatter and parameter all-gather.
void Setup::make_gradient_sync() {
  const bool sharded = cfg.shards_optimizer();
  gradient_sync = std::make_unique<dist::GradientSync>(
      sharded ? dist::GradientSync::Mode::Sharded : dist::GradientSync::Mode::AllReduce, *dp_group, *state, stage_model,
      at.tp_rank, cfg.ddp_bucket_size);
  if (sharded)
    logger().info("distributed optimizer: {} bucket(s)", gradient_sync->buckets());
  else if (at.dp > 1)
    logger().info("gradient all-reduce: {} bucket(s)", gradient_sync->buckets());
}

void Setup::begin_step() {
  global_batch = cfg.global_batch_at(progress.consumed);
  if (cfg.step_schedule.active()) cfg.check_step_batch(global_batch);  // a resume on more ranks
  micro_batches = cfg.micro_batches_at(progress.consumed);
  batch_terms = cfg.weighs_tokens_globally() ? 1.0 : static_cast<double>(micro_batches * at.dp);
}

void Setup::finish_parameter_gather(const std::string& before) {
  gradient_sync->finish_parameter_gather("parameter all-gather before " + before);
}

void feed(graph::Executable& exe, Batch& batch, const GptConfig& model, const Layout& at) {
  // From the tokens as the data holds them, before sharding rewrites their ids.
  if (batch.documents) batch.documents->feed(exe, batch.tokens, batch.loss_tokens);
  if (at.tp > 1 && has_input(exe, "targets")) shard_token_ids(batch.targets, model.local_vocab(), at.tp_rank);
  if (at.tp > 1 && has_input(exe, "token_mask")) {
    batch.token_mask.resize(batch.tokens.size());
    shard_input_ids(batch.tokens, batch.token_mask, model.local_vocab(), at.tp_rank);
    // An f32 input in every precision (the graph casts it to the compute dtype).
    exe.buffer("token_mask")->write(batch.token_mask.data(), batch.token_mask.size() * sizeof(float));
  }
  // A pipeline stage's graph reads the tokens (first stage) or the targets (last) only.
  if (has_input(exe, "tokens")) exe.buffer("tokens")->write(batch.tokens.data(), batch.tokens.size() * sizeof(int32_t));
  if (has_input(exe, "targets"))
    exe.buffer("targets")->write(batch.targets.data(), batch.targets.size() * sizeof(int32_t));
}

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

}  // namespace kiln::trainer
