#include "compiler_cache/compile_pool.h"

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

#include "compiler_cache/compile_task.h"
#include "compiler_cache/lock.h"
#include "core/error.h"

namespace kiln::compiler_cache {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct Running {
  size_t index = 0;  // into the tasks
  std::string dir;   // where its task/IR/log files live
  Clock::time_point started;
  bool timed_out = false;
};

std::string last_line_of_file(const std::string& path) {
  std::ifstream in(path);
  std::string line, last;
  // The worker's last non-empty line is its error.
  while (std::getline(in, line))
    if (!line.empty()) last = line;
  return last.empty() ? "(no output)" : last;
}

std::string why_failed(const Running& r, int status, double timeout_s) {
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (r.timed_out) return "timed out after " + std::to_string(timeout_s) + " s";
  if (WIFSIGNALED(status)) return "worker crashed (signal " + std::to_string(WTERMSIG(status)) + ")";
  std::string log = last_line_of_file(r.dir + "/worker.log");
  if (code == kWorkerFailed || code == kWorkerFailedBefore) return log;
  return "worker exited with status " + std::to_string(code) + ": " + log;
}

}  // namespace

int PoolResult::count(TaskResult r) const { return static_cast<int>(std::count(results.begin(), results.end(), r)); }

int default_parallelism() {
  // One compilation per core, and at least ~1 GiB of available memory each
  // (CLBlast and driver compilers are memory-hungry).
  long cores = ::sysconf(_SC_NPROCESSORS_ONLN);
  long pages = ::sysconf(_SC_AVPHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  long by_memory = pages > 0 && page > 0 ? static_cast<long>((static_cast<double>(pages) * page) / (1 << 30)) : cores;
  return static_cast<int>(std::max(1L, std::min(cores > 0 ? cores : 1L, std::max(1L, by_memory))));
}

PoolResult run_compile_pool(const Store& store, const std::vector<PoolTask>& tasks, const PoolOptions& options) {
  PoolResult out;
  out.results.assign(tasks.size(), TaskResult::Failed);
  // Already cached (verified: a corrupt entry is quarantined and redone),
  // or failed before (only retry_failed compiles those again).
  int done = 0, failed = 0;
  std::vector<size_t> queue;
  for (size_t i = 0; i < tasks.size(); ++i) {
    const ExtractedTask& w = tasks[i].work;
    if (store.read(store.entry_path(w.parts, w.key), w.key)) {
      out.results[i] = TaskResult::Cached;
      ++done;
    } else if (!options.retry_failed && store.read_failed(w.parts, w.key)) {
      ++failed;
      std::printf("precompile: failed before: %s (key %s); pass --retry-failed to try again\n", tasks[i].label.c_str(),
                  w.key.substr(0, 16).c_str());
    } else {
      queue.push_back(i);
    }
  }

  char tmpl[] = "/tmp/kiln-precompile-XXXXXX";
  std::string scratch = ::mkdtemp(tmpl) ? tmpl : "";
  if (scratch.empty()) throw Error("cannot create a scratch directory under /tmp for precompile tasks");
  std::vector<std::string> dirs(tasks.size()), task_files(tasks.size());
  for (size_t q = 0; q < queue.size(); ++q) {
    const size_t i = queue[q];
    dirs[i] = scratch + "/task-" + std::to_string(q);
    task_files[i] = write_task(tasks[i].work, dirs[i]);
  }

  std::map<pid_t, Running> running;
  std::string last_progress;
  auto last_print = Clock::now() - std::chrono::seconds(10);
  int locked = 0;
  LockPolicy lock_policy;
  const auto start = Clock::now();
  while (!queue.empty() || !running.empty()) {
    // Start work, skipping keys another process is compiling right now.
    locked = 0;
    for (auto it = queue.begin(); it != queue.end();) {
      const size_t i = *it;
      const ExtractedTask& w = tasks[i].work;
      std::optional<LockHolder> holder = read_lock(store.lock_path(w.parts, w.key));
      if (holder && !lock_is_stale(*holder, lock_policy)) {
        ++locked;
        ++it;
        continue;
      }
      if (store.read(store.entry_path(w.parts, w.key), w.key)) {  // published by another process meanwhile
        out.results[i] = TaskResult::Cached;
        ++done;
        it = queue.erase(it);
        continue;
      }
      if (static_cast<int>(running.size()) >= options.parallel) {
        ++it;
        continue;
      }
      const pid_t pid = options.start_worker(task_files[i], dirs[i] + "/worker.log");
      running[pid] = Running{i, dirs[i], Clock::now(), false};
      it = queue.erase(it);
    }
    // Reap finished workers; kill those past the timeout.
    for (;;) {
      int status = 0;
      pid_t pid = ::waitpid(-1, &status, WNOHANG);
      if (pid <= 0) break;
      auto it = running.find(pid);
      if (it == running.end()) continue;
      const Running r = it->second;
      running.erase(it);
      const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      if (code == kWorkerCompiled) {
        out.results[r.index] = TaskResult::Compiled;
        ++done;
      } else if (code == kWorkerAlreadyCached) {
        out.results[r.index] = TaskResult::Cached;
        ++done;
      } else {
        ++failed;
        std::printf("precompile: FAILED %s (key %s): %s\n", tasks[r.index].label.c_str(),
                    tasks[r.index].work.key.substr(0, 16).c_str(), why_failed(r, status, options.timeout_s).c_str());
      }
    }
    const auto now = Clock::now();
    for (auto& [pid, r] : running)
      if (!r.timed_out && options.timeout_s > 0 &&
          std::chrono::duration<double>(now - r.started).count() > options.timeout_s) {
        r.timed_out = true;
        ::kill(pid, SIGKILL);
      }
    const std::string progress = "precompile: " + std::to_string(queue.size() + running.size()) + " remaining, " +
                                 std::to_string(locked) + " locked, " + std::to_string(failed) + " failed, " +
                                 std::to_string(done) + " done";
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
  out.compile_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return out;
}

}  // namespace kiln::compiler_cache
