// `kiln precompile <kiln train flags> [--world-size N]`: build every graph
// each rank of the training run would execute (trainer/model/run_graphs.h)
// in extract mode, de-duplicate them by cache key, and compile the unique ones in the worker pool
// (compiler_cache/compile_pool.h: worker processes, largest first, each with
// a timeout) into the compile cache. The exit status is the number of failed
// compilations (capped at 255). With --json the summary is one JSON object on
// stdout and every human line goes to stderr.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <set>

#include "cli/cache_flags.h"
#include "cli/commands.h"
#include "compiler_cache/compile_pool.h"
#include "compiler_cache/compile_task.h"
#include "compiler_cache/precompile_summary.h"
#include "compiler_cache/store.h"
#include "core/fallback_device.h"
#include "core/log.h"
#include "core/registry.h"
#include "graph/executor.h"
#include "kiln/ir_decode.hpp"
#include "trainer/model/run_graphs.h"
#include "trainer/parallel_layout.h"

namespace kiln::cli {
namespace {

using Clock = std::chrono::steady_clock;

// A worker is this binary again: `kiln precompile --worker TASK.json`.
pid_t spawn_worker(const std::string& task_file, const std::string& log, const CacheFlags& flags,
                   const std::string& cache_dir) {
  std::vector<std::string> args = {"kiln", "precompile", "--worker", task_file, "--cache-dir", cache_dir};
  if (flags.retry_failed) args.push_back("--retry-failed");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw Error("cannot create " + log);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::execv("/proc/self/exe", argv.data());
    ::_exit(127);
  }
  ::close(fd);
  if (pid < 0) throw Error("cannot start a precompile worker process (fork failed); lower --num-parallel");
  return pid;
}

// What extraction built, and what the ranks of the job run.
struct ExtractCounts {
  int builds = 0;           // graphs built (once per pipeline stage)
  size_t units = 0;         // compile units of the built graphs
  int64_t ranks = 0;        // --world-size
  int64_t stages = 0;       // distinct graph sets: one per pipeline stage
  int64_t rank_graphs = 0;  // graphs summed over every rank
  int64_t rank_units = 0;   // compile units summed over every rank
};

// Extract mode: build every executable of every rank of a `world_size`-rank
// job, compile nothing. A rank's graphs depend only on its pipeline stage
// (trainer/model/run_graphs.h), so each stage's are built once, for the
// first of its ranks in the trainer's own order. Returns the unique compile
// units, largest first.
std::vector<compiler_cache::PoolTask> extract(const trainer::TrainConfig& cfg, int64_t world_size,
                                              ExtractCounts* counts) {
  std::unique_ptr<Device> device =
      Registry::instance().open(cfg.backend, static_cast<int>(cfg.device), static_cast<int>(cfg.num_threads));
  // On stdout with the run's other status lines: stderr carries only what went wrong.
  std::printf("precompile: backend %s (plugin %s, %s)\n", device->backend().c_str(), device->plugin().path.c_str(),
              device->plugin().binary_identity().c_str());
  FallbackDevice fallback;
  // The attention core `kiln train` chooses on this backend, so the units are its.
  const trainer::AttentionChoice attention = trainer::choose_attention(cfg.attention_backend, cfg.model, *device);
  std::printf("precompile: %s\n", attention.line.c_str());
  const int64_t tp = cfg.model.tensor_parallel, pp = cfg.pipeline_model_parallel_size;
  std::map<int64_t, std::pair<trainer::Layout, int64_t>> ranks_of_stage;  // pp_rank -> (first rank, count)
  const trainer::ParallelState parallel = trainer::job_parallel_state(world_size, tp, pp);
  for (int64_t rank = 0; rank < world_size; ++rank) {
    const trainer::Layout at = trainer::rank_layout(parallel, rank);
    ++ranks_of_stage.try_emplace(at.pp_rank, at, 0).first->second.second;
  }
  counts->ranks = world_size;
  counts->stages = static_cast<int64_t>(ranks_of_stage.size());
  compiler_cache::Extraction extraction;
  std::vector<std::string> labels;
  for (const auto& [stage, first_and_count] : ranks_of_stage) {
    const auto& [at, ranks] = first_and_count;
    const trainer::RunGraphs graphs = trainer::build_rank_graphs(cfg, at, attention.fused);
    const size_t before = extraction.tasks().size();
    for (const auto& [name, g] : graphs.list()) {
      graph::Executable exe(*device, *g, &fallback, &extraction);
      std::string label;
      if (pp > 1) {
        label += "stage ";
        label += std::to_string(stage);
        label += ": ";
      }
      label += name;
      labels.resize(extraction.tasks().size(), label);
      ++counts->builds;
      counts->rank_graphs += ranks;
    }
    counts->rank_units += static_cast<int64_t>(extraction.tasks().size() - before) * ranks;
  }
  std::vector<compiler_cache::ExtractedTask> all = extraction.tasks();
  counts->units = all.size();
  std::map<std::string, size_t> index_of_key;
  std::vector<compiler_cache::PoolTask> unique;
  for (size_t i = 0; i < all.size(); ++i) {
    auto [it, inserted] = index_of_key.emplace(all[i].key, unique.size());
    if (inserted) unique.push_back({std::move(all[i]), labels[i]});
  }
  // Largest first: the longest compilations start while others fill in.
  std::stable_sort(unique.begin(), unique.end(),
                   [](const compiler_cache::PoolTask& a, const compiler_cache::PoolTask& b) {
                     return a.work.ir.size() > b.work.ir.size();
                   });
  return unique;
}

// The names of the ops in serialized IR (none if it does not decode: the
// workers report that).
std::set<std::string> ops_of(const std::vector<uint8_t>& ir) {
  ir::DecodedGraph g;
  std::set<std::string> ops;
  if (!ir::decode(ir.data(), ir.size(), &g).empty()) return ops;
  for (const ir::DecodedNode& n : g.nodes) ops.insert(kiln_op_name(n.op));
  return ops;
}

// More workers than this many per core only thrash (compiles are CPU-bound)
// and multiply the memory they hold.
constexpr int kMaxWorkersPerCore = 4;

// An explicit --num-parallel, capped at kMaxWorkersPerCore per core.
int capped_parallelism(int64_t requested) {
  const long cores = std::max(1L, ::sysconf(_SC_NPROCESSORS_ONLN));
  const long cap = kMaxWorkersPerCore * cores;
  if (requested <= cap) return static_cast<int>(requested);
  logger().warn("--num-parallel {} is more than {} per core; using {} ({} cores here)", requested, kMaxWorkersPerCore,
                cap, cores);
  return static_cast<int>(cap);
}

// --json: the summary object goes to what stdout was, and stdout becomes
// stderr, so every human line (ours, the pool's, the logger's) lands there.
class JsonOutput {
 public:
  explicit JsonOutput(bool enabled) {
    if (!enabled) return;
    std::fflush(stdout);
    fd_ = ::dup(1);
    if (fd_ < 0 || ::dup2(2, 1) < 0) throw Error("--json: cannot set up stdout for the JSON summary");
  }
  ~JsonOutput() {
    if (fd_ >= 0) ::close(fd_);
  }
  JsonOutput(const JsonOutput&) = delete;
  JsonOutput& operator=(const JsonOutput&) = delete;
  void write(const nlohmann::json& j) const {
    if (fd_ < 0) return;
    std::fflush(stdout);
    const std::string text = j.dump() + "\n";
    size_t off = 0;
    while (off < text.size()) {
      const ssize_t n = ::write(fd_, text.data() + off, text.size() - off);
      if (n < 0) throw Error("--json: cannot write the JSON summary to stdout");
      off += static_cast<size_t>(n);
    }
  }

 private:
  int fd_ = -1;
};

int run_parent(const trainer::TrainConfig& cfg, int64_t world_size, const CacheFlags& flags, int64_t num_parallel,
               double timeout_s, bool json) {
  const JsonOutput json_output(json);
  compiler_cache::CacheConfig config = flags.config();
  config.require_precompiled = false;
  if (config.dir.empty()) throw Error("kiln precompile needs a compile cache; pass --cache-dir DIR (not 'off')");
  compiler_cache::configure(config);
  // configure() warned (one line) if the cache is read-only: then cached
  // units count, and missing ones are compiled to check them, not stored.
  if (compiler_cache::config().dir.empty())
    throw Error("compile cache " + config.dir + " is not writable; pass --cache-dir with a writable directory");
  const compiler_cache::Store store(config.dir);
  const int parallel = num_parallel > 0 ? capped_parallelism(num_parallel) : compiler_cache::default_parallelism();

  auto t0 = Clock::now();
  ExtractCounts counts;
  std::vector<compiler_cache::PoolTask> tasks = extract(cfg, world_size, &counts);
  const int builds = counts.builds;
  const size_t units = counts.units;
  std::printf(
      "precompile: %lld rank%s (%lld data-parallel x %lld tensor-parallel x %lld pipeline-parallel) run %lld graphs "
      "(%lld compile units); %lld distinct graph set%s, one per pipeline stage\n",
      static_cast<long long>(counts.ranks), counts.ranks == 1 ? "" : "s",
      static_cast<long long>(cfg.data_parallel_size), static_cast<long long>(cfg.model.tensor_parallel),
      static_cast<long long>(cfg.pipeline_model_parallel_size), static_cast<long long>(counts.rank_graphs),
      static_cast<long long>(counts.rank_units), static_cast<long long>(counts.stages), counts.stages == 1 ? "" : "s");
  std::printf("precompile: extracted %d graphs (%zu compile units) in %.2f s; %zu unique after de-duplication\n",
              builds, units, std::chrono::duration<double>(Clock::now() - t0).count(), tasks.size());

  compiler_cache::PoolOptions options;
  options.parallel = parallel;
  options.measure_memory = num_parallel == 0;
  options.timeout_s = timeout_s;
  options.retry_failed = flags.retry_failed;
  options.start_worker = [&](const std::string& task_file, const std::string& log) {
    return spawn_worker(task_file, log, flags, config.dir);
  };
  const compiler_cache::PoolResult result = compiler_cache::run_compile_pool(store, tasks, options);
  compiler_cache::PrecompileSummary summary;
  summary.graphs = builds;
  summary.units = static_cast<int>(units);
  summary.unique_units = static_cast<int>(tasks.size());
  summary.ranks = counts.ranks;
  summary.rank_graphs = counts.rank_graphs;
  summary.rank_units = counts.rank_units;
  summary.cached = result.count(compiler_cache::TaskResult::Cached);
  summary.compiled = result.count(compiler_cache::TaskResult::Compiled);
  summary.failed = result.count(compiler_cache::TaskResult::Failed);
  // Units placed on the fallback device at extraction, and units the plugin
  // refused at compile (UNSUPPORTED: they run on the cpu fallback).
  std::set<std::string> fallback_ops;
  for (size_t i = 0; i < tasks.size(); ++i) {
    const bool placed = tasks[i].work.backend != cfg.backend;
    const bool refused = result.results.at(i) == compiler_cache::TaskResult::Fallback;
    if (!placed && !refused) continue;
    ++summary.fell_back;
    summary.refused += refused ? 1 : 0;
    for (const std::string& op : ops_of(tasks[i].work.ir)) fallback_ops.insert(op);
  }
  summary.fallback_ops.assign(fallback_ops.begin(), fallback_ops.end());
  summary.retried_for_memory = result.retried_for_memory;
  summary.workers = result.max_running;
  summary.stored = compiler_cache::writable();
  summary.compile_seconds = result.compile_seconds;
  summary.seconds = std::chrono::duration<double>(Clock::now() - t0).count();

  std::string chosen_by = num_parallel > 0 ? "--num-parallel" : "default";
  if (num_parallel == 0 && result.worker_peak_rss_bytes > 0)
    chosen_by = "from cores and memory, worker peak RSS " + std::to_string(result.worker_peak_rss_bytes >> 20) + " MiB";
  std::printf("precompile: %d worker process%s at most (%s), %.2f s compiling, %.2f s in all\n", summary.workers,
              summary.workers == 1 ? "" : "es", chosen_by.c_str(), summary.compile_seconds, summary.seconds);
  if (!summary.stored && summary.compiled > 0)
    std::printf("precompile: the compile cache is read-only: %d compiled unit%s checked, not stored\n",
                summary.compiled, summary.compiled == 1 ? "" : "s");
  std::fputs(compiler_cache::summary_text(summary).c_str(), stdout);
  std::fflush(stdout);
  json_output.write(compiler_cache::summary_json(summary));
  return compiler_cache::exit_status(summary);
}

}  // namespace

int run_precompile(const std::vector<std::string>& args) {
  if (!args.empty() && args[0] == "--worker") {
    trainer::Flags flags("precompile --worker");
    std::string task;
    CacheFlags cache_flags;
    flags.add("--worker", &task, "task file (internal: one compilation)");
    cache_flags.register_flags(flags);
    if (!flags.parse(args)) return 0;
    return compiler_cache::run_task(task, cache_flags.config());
  }
  trainer::TrainConfig cfg;
  trainer::Flags flags("precompile");
  cfg.register_flags(flags);
  CacheFlags cache_flags;
  cache_flags.register_flags(flags);
  int64_t num_parallel = 0;
  double timeout_s = 1800;
  bool json = false;
  flags.add("--num-parallel", &num_parallel, "worker processes compiling at once (default: from cores and memory)");
  flags.add("--compile-timeout", &timeout_s, "seconds one compilation may take before its worker is killed (0: none)");
  flags.add("--json", &json, "print the summary as one JSON object on stdout (human lines go to stderr)");
  int64_t world_size = 0;
  flags.add("--world-size", &world_size,
            "ranks of the training job (its mpirun -np N) whose graphs to build, every one on this machine "
            "(default: one model replica, tensor x pipeline-parallel size)",
            trainer::Bounds::at_least(1));
  if (!flags.parse(args)) return 0;
  // The layout checks `kiln train` makes on its mpirun world, with the same words.
  if (!flags.given("--world-size"))
    world_size =
        std::max<int64_t>(1, cfg.tensor_model_parallel_size) * std::max<int64_t>(1, cfg.pipeline_model_parallel_size);
  trainer::set_world_size(cfg, world_size, "--world-size N");
  cfg.finalize(flags);
  if (num_parallel < 0) throw Error("--num-parallel must be >= 0 (0: choose from cores and memory)");
  return run_parent(cfg, world_size, cache_flags, num_parallel, timeout_s, json);
}

}  // namespace kiln::cli
