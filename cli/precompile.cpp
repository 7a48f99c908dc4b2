// `kiln precompile <kiln train flags>`: build every graph the training run
// would execute (trainer/model/run_graphs.h) in extract mode, de-duplicate them by
// cache key, and compile the unique ones in a pool of worker processes
// (largest first, each with a timeout) into the compile cache. The exit
// status is the number of failed compilations (capped at 255).
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "cache/atomic_file.h"
#include "cache/store.h"
#include "cli/cache_flags.h"
#include "cli/commands.h"
#include "cli/precompile_task.h"
#include "core/fallback_device.h"
#include "core/log.h"
#include "core/registry.h"
#include "graph/executor.h"
#include "trainer/model/run_graphs.h"

namespace kiln::cli {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct Task {
  cache::ExtractedTask work;
  std::string label;  // the graph it came from, for messages
  int uses = 0;       // how many compile units in the run share this key
  std::string dir;    // where its task/IR/log files live
  pid_t pid = 0;
  Clock::time_point started;
  bool timed_out = false;
};

int default_parallelism() {
  // One compilation per core, and at least ~1 GiB of available memory each
  // (CLBlast and driver compilers are memory-hungry).
  long cores = ::sysconf(_SC_NPROCESSORS_ONLN);
  long pages = ::sysconf(_SC_AVPHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  long by_memory = pages > 0 && page > 0 ? static_cast<long>((static_cast<double>(pages) * page) / (1 << 30)) : cores;
  return static_cast<int>(std::max(1L, std::min(cores > 0 ? cores : 1L, std::max(1L, by_memory))));
}

std::string first_line_of_file(const std::string& path) {
  std::ifstream in(path);
  std::string line, last;
  // The worker's last non-empty line is its error.
  while (std::getline(in, line))
    if (!line.empty()) last = line;
  return last.empty() ? "(no output)" : last;
}

pid_t spawn_worker(const Task& t, const CacheFlags& flags, const std::string& cache_dir) {
  std::vector<std::string> args = {"kiln", "precompile", "--worker", t.dir + "/task.json", "--cache-dir", cache_dir};
  if (flags.retry_failed) args.push_back("--retry-failed");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const std::string log = t.dir + "/worker.log";
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

// Extract mode: build every executable of the run, compile nothing.
std::vector<Task> extract(const trainer::TrainConfig& cfg, int* builds, size_t* units) {
  std::unique_ptr<Device> device =
      Registry::instance().open(cfg.backend, static_cast<int>(cfg.device), static_cast<int>(cfg.num_threads));
  FallbackDevice fallback;
  trainer::RunGraphs graphs = trainer::build_run_graphs(cfg);
  cache::Extraction extraction;
  std::vector<std::string> labels;
  for (const auto& [name, g] : graphs.list()) {
    graph::Executable exe(*device, *g, &fallback, &extraction);
    labels.resize(extraction.tasks().size(), name);
    ++*builds;
  }
  std::vector<cache::ExtractedTask> all = extraction.tasks();
  *units = all.size();
  std::map<std::string, size_t> index_of_key;
  std::vector<Task> unique;
  for (size_t i = 0; i < all.size(); ++i) {
    auto [it, inserted] = index_of_key.emplace(all[i].key, unique.size());
    if (inserted) {
      Task t;
      t.work = std::move(all[i]);
      t.label = labels[i];
      unique.push_back(std::move(t));
    }
    ++unique[it->second].uses;
  }
  // Largest first: the longest compilations start while others fill in.
  std::stable_sort(unique.begin(), unique.end(),
                   [](const Task& a, const Task& b) { return a.work.ir.size() > b.work.ir.size(); });
  return unique;
}

void write_task(Task& t, const std::string& dir) {
  t.dir = dir;
  cache::make_dirs(dir);
  const std::string ir_file = dir + "/graph.ir";
  cache::write_file_atomically(ir_file, t.work.ir.data(), t.work.ir.size());
  const std::shared_ptr<const Plugin> plugin = Registry::instance().find(t.work.backend);
  nlohmann::json j = {{"backend", t.work.backend},
                      {"plugin_path", plugin ? plugin->path : ""},
                      {"device_index", t.work.device_index},
                      {"ir_file", ir_file},
                      {"summary", t.work.summary}};
  const std::string text = j.dump();
  cache::write_file_atomically(dir + "/task.json", text.data(), text.size());
}

int run_parent(const trainer::TrainConfig& cfg, const CacheFlags& flags, int64_t num_parallel, double timeout_s) {
  cache::CacheConfig config = flags.config();
  config.require_precompiled = false;
  if (config.dir.empty()) throw Error("kiln precompile needs a compile cache; pass --cache-dir DIR (not 'off')");
  cache::configure(config);
  if (!cache::writable())
    throw Error("compile cache " + config.dir + " is not writable; pass --cache-dir with a writable directory");
  const cache::Store store(config.dir);
  const int parallel = num_parallel > 0 ? static_cast<int>(num_parallel) : default_parallelism();

  auto t0 = Clock::now();
  int builds = 0;
  size_t units = 0;
  std::vector<Task> tasks = extract(cfg, &builds, &units);
  std::printf("precompile: extracted %d graphs (%zu compile units) in %.2f s; %zu unique after de-duplication\n",
              builds, units, std::chrono::duration<double>(Clock::now() - t0).count(), tasks.size());

  // Already cached (verified: a corrupt entry is quarantined and redone),
  // or failed before (only --retry-failed compiles those again).
  int cached = 0, compiled = 0, failed = 0;
  std::vector<Task*> queue;
  for (Task& t : tasks) {
    if (store.read(store.entry_path(t.work.parts, t.work.key), t.work.key)) {
      ++cached;
    } else if (!flags.retry_failed && store.read_failed(t.work.parts, t.work.key)) {
      ++failed;
      std::printf("precompile: failed before: %s (key %s); pass --retry-failed to try again\n", t.label.c_str(),
                  t.work.key.substr(0, 16).c_str());
    } else {
      queue.push_back(&t);
    }
  }

  char tmpl[] = "/tmp/kiln-precompile-XXXXXX";
  std::string scratch = ::mkdtemp(tmpl) ? tmpl : "";
  if (scratch.empty()) throw Error("cannot create a scratch directory under /tmp for precompile tasks");
  for (size_t i = 0; i < queue.size(); ++i) write_task(*queue[i], scratch + "/task-" + std::to_string(i));

  std::map<pid_t, Task*> running;
  std::string last_progress;
  auto last_print = Clock::now() - std::chrono::seconds(10);
  int locked = 0;
  cache::LockPolicy lock_policy;
  const auto start = Clock::now();
  while (!queue.empty() || !running.empty()) {
    // Start work, skipping keys another process is compiling right now.
    locked = 0;
    for (auto it = queue.begin(); it != queue.end();) {
      Task& t = **it;
      const std::string entry = store.entry_path(t.work.parts, t.work.key);
      std::optional<cache::LockHolder> holder = cache::read_lock(store.lock_path(t.work.parts, t.work.key));
      if (holder && !cache::lock_is_stale(*holder, lock_policy)) {
        ++locked;
        ++it;
        continue;
      }
      if (store.read(entry, t.work.key)) {  // published by another process meanwhile
        ++cached;
        it = queue.erase(it);
        continue;
      }
      if (static_cast<int>(running.size()) >= parallel) {
        ++it;
        continue;
      }
      t.pid = spawn_worker(t, flags, config.dir);
      t.started = Clock::now();
      running[t.pid] = &t;
      it = queue.erase(it);
    }
    // Reap finished workers; kill those past the timeout.
    for (;;) {
      int status = 0;
      pid_t pid = ::waitpid(-1, &status, WNOHANG);
      if (pid <= 0) break;
      auto it = running.find(pid);
      if (it == running.end()) continue;
      Task& t = *it->second;
      running.erase(it);
      const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      if (code == kWorkerCompiled) {
        ++compiled;
      } else if (code == kWorkerAlreadyCached) {
        ++cached;
      } else {
        ++failed;
        std::string why = t.timed_out           ? "timed out after " + std::to_string(timeout_s) + " s"
                          : WIFSIGNALED(status) ? "worker crashed (signal " + std::to_string(WTERMSIG(status)) + ")"
                          : code == kWorkerFailed || code == kWorkerFailedBefore
                              ? first_line_of_file(t.dir + "/worker.log")
                              : "worker exited with status " + std::to_string(code) + ": " +
                                    first_line_of_file(t.dir + "/worker.log");
        std::printf("precompile: FAILED %s (key %s): %s\n", t.label.c_str(), t.work.key.substr(0, 16).c_str(),
                    why.c_str());
      }
    }
    const auto now = Clock::now();
    for (auto& [pid, t] : running)
      if (!t->timed_out && timeout_s > 0 && std::chrono::duration<double>(now - t->started).count() > timeout_s) {
        t->timed_out = true;
        ::kill(pid, SIGKILL);
      }
    const std::string progress = "precompile: " + std::to_string(queue.size() + running.size()) + " remaining, " +
                                 std::to_string(locked) + " locked, " + std::to_string(failed) + " failed, " +
                                 std::to_string(compiled + cached) + " done";
    if (progress != last_progress &&
        (now - last_print > std::chrono::milliseconds(500) || (queue.empty() && running.empty()))) {
      std::printf("%s\n", progress.c_str());
      std::fflush(stdout);
      last_progress = progress;
      last_print = now;
    }
    if (!queue.empty() || !running.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::error_code ec;
  fs::remove_all(scratch, ec);

  std::printf("precompile: %d worker process%s, %.2f s compiling, %.2f s in all\n", parallel, parallel == 1 ? "" : "es",
              std::chrono::duration<double>(Clock::now() - start).count(),
              std::chrono::duration<double>(Clock::now() - t0).count());
  std::printf("Total graphs: %zu\n", tasks.size());
  std::printf("Already cached: %d\n", cached);
  std::printf("Total successful compilations: %d\n", compiled);
  std::printf("Total failed compilations: %d\n", failed);
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
    return run_precompile_worker(task, cache_flags.config());
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
