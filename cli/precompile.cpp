// `kiln precompile <kiln train flags>`: build every graph the training run
// would execute (trainer/model/run_graphs.h) in extract mode, de-duplicate them by
// cache key, and compile the unique ones in the worker pool
// (compiler_cache/compile_pool.h: worker processes, largest first, each with
// a timeout) into the compile cache. The exit status is the number of failed
// compilations (capped at 255).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>

#include "cli/cache_flags.h"
#include "cli/commands.h"
#include "compiler_cache/compile_pool.h"
#include "compiler_cache/compile_task.h"
#include "compiler_cache/store.h"
#include "core/fallback_device.h"
#include "core/log.h"
#include "core/registry.h"
#include "graph/executor.h"
#include "trainer/model/run_graphs.h"

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

// Extract mode: build every executable of the run, compile nothing. Returns
// the unique compile units, largest first.
std::vector<compiler_cache::PoolTask> extract(const trainer::TrainConfig& cfg, int* builds, size_t* units) {
  std::unique_ptr<Device> device =
      Registry::instance().open(cfg.backend, static_cast<int>(cfg.device), static_cast<int>(cfg.num_threads));
  FallbackDevice fallback;
  trainer::RunGraphs graphs = trainer::build_run_graphs(cfg);
  compiler_cache::Extraction extraction;
  std::vector<std::string> labels;
  for (const auto& [name, g] : graphs.list()) {
    graph::Executable exe(*device, *g, &fallback, &extraction);
    labels.resize(extraction.tasks().size(), name);
    ++*builds;
  }
  std::vector<compiler_cache::ExtractedTask> all = extraction.tasks();
  *units = all.size();
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

int run_parent(const trainer::TrainConfig& cfg, const CacheFlags& flags, int64_t num_parallel, double timeout_s) {
  compiler_cache::CacheConfig config = flags.config();
  config.require_precompiled = false;
  if (config.dir.empty()) throw Error("kiln precompile needs a compile cache; pass --cache-dir DIR (not 'off')");
  compiler_cache::configure(config);
  if (!compiler_cache::writable())
    throw Error("compile cache " + config.dir + " is not writable; pass --cache-dir with a writable directory");
  const compiler_cache::Store store(config.dir);
  const int parallel = num_parallel > 0 ? static_cast<int>(num_parallel) : compiler_cache::default_parallelism();

  auto t0 = Clock::now();
  int builds = 0;
  size_t units = 0;
  std::vector<compiler_cache::PoolTask> tasks = extract(cfg, &builds, &units);
  std::printf("precompile: extracted %d graphs (%zu compile units) in %.2f s; %zu unique after de-duplication\n",
              builds, units, std::chrono::duration<double>(Clock::now() - t0).count(), tasks.size());

  compiler_cache::PoolOptions options;
  options.parallel = parallel;
  options.timeout_s = timeout_s;
  options.retry_failed = flags.retry_failed;
  options.start_worker = [&](const std::string& task_file, const std::string& log) {
    return spawn_worker(task_file, log, flags, config.dir);
  };
  const compiler_cache::PoolResult result = compiler_cache::run_compile_pool(store, tasks, options);
  const int cached = result.count(compiler_cache::TaskResult::Cached);
  const int compiled = result.count(compiler_cache::TaskResult::Compiled);
  const int failed = result.count(compiler_cache::TaskResult::Failed);
  const int fallbacks = result.count(compiler_cache::TaskResult::Fallback);

  std::printf("precompile: %d worker process%s, %.2f s compiling, %.2f s in all\n", parallel, parallel == 1 ? "" : "es",
              result.compile_seconds, std::chrono::duration<double>(Clock::now() - t0).count());
  std::printf("Total graphs: %zu\n", tasks.size());
  std::printf("Already cached: %d\n", cached);
  std::printf("Total successful compilations: %d\n", compiled);
  std::printf("Total failed compilations: %d\n", failed);
  if (fallbacks > 0) std::printf("Unsupported by the backend (run on the cpu fallback): %d\n", fallbacks);
  std::fflush(stdout);
  return std::min(failed, 255);
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
  flags.add("--num-parallel", &num_parallel, "worker processes compiling at once (default: from cores and memory)");
  flags.add("--compile-timeout", &timeout_s, "seconds one compilation may take before its worker is killed (0: none)");
  if (!flags.parse(args)) return 0;
  cfg.finalize(flags);
  if (num_parallel < 0) throw Error("--num-parallel must be >= 0 (0: choose from cores and memory)");
  return run_parent(cfg, cache_flags, num_parallel, timeout_s);
}

}  // namespace kiln::cli
