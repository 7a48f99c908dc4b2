#include "compiler_cache/compile_pool.h"

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include "compiler_cache/compile_task.h"
#include "compiler_cache/lock.h"
#include "compiler_cache/pool_progress.h"
#include "core/error.h"
#include "core/regular_file.h"

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
  std::istringstream in;
  try {
    in.str(read_input({path, "worker log", "", kMaxLogFileBytes}));
  } catch (const Error& e) {
    return e.what();
  }
  std::string line, last;
  // The worker's last non-empty line is its error.
  while (std::getline(in, line))
    if (!line.empty()) last = line;
  return last.empty() ? "(no output)" : last;
}

std::string why_failed(const Running& r, int status, double timeout_s) {
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (r.timed_out) return "timed out after " + std::to_string(timeout_s) + " s";
  if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
    return "worker killed (SIGKILL; the kernel's OOM killer sends it when memory runs out)";
  if (WIFSIGNALED(status)) return "worker crashed (signal " + std::to_string(WTERMSIG(status)) + ")";
  std::string log = last_line_of_file(r.dir + "/worker.log");
  if (code == kWorkerFailed || code == kWorkerFailedBefore || code == kWorkerOutOfMemory) return log;
  return "worker exited with status " + std::to_string(code) + ": " + log;
}

// SIGTERM, SIGINT and SIGHUP while the pool runs: the loop stops the
// workers and removes its scratch directory instead of dying at once and
// leaving both behind. The handler only records the signal.
volatile std::sig_atomic_t g_stop_signal = 0;
extern "C" void on_pool_stop_signal(int sig) { g_stop_signal = sig; }

class StopSignals {
 public:
  StopSignals() {
    g_stop_signal = 0;
    struct sigaction sa {};
    sa.sa_handler = on_pool_stop_signal;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < kSignals.size(); ++i) ::sigaction(kSignals[i], &sa, &old_[i]);
  }
  ~StopSignals() {
    for (size_t i = 0; i < kSignals.size(); ++i) ::sigaction(kSignals[i], &old_[i], nullptr);
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

 private:
  static constexpr std::array<int, 3> kSignals = {SIGTERM, SIGINT, SIGHUP};
  std::array<struct sigaction, kSignals.size()> old_{};
};

// $TMPDIR/kiln-precompile-XXXXXX (TMPDIR defaults to /tmp), removed with
// everything in it when the pool ends, however it ends.
class ScratchDir {
 public:
  ScratchDir() {
    const char* tmpdir = std::getenv("TMPDIR");
    const std::string base = tmpdir && *tmpdir ? tmpdir : "/tmp";
    std::string tmpl = base + "/kiln-precompile-XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) {
      throw Error("cannot create a scratch directory under " + base + " for precompile tasks: " + std::strerror(errno) +
                  "; set TMPDIR to a writable directory");
    }
    path_ = tmpl;
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Sends `sig` to every running worker and reaps them all; one that has not
// ended after a grace period is killed. Workers publish entries atomically,
// so a stopped compile leaves at most a lock that the next run takes over.
void stop_workers(std::map<pid_t, Running>& running, int sig) {
  for (const auto& [pid, r] : running) ::kill(pid, sig);
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while (!running.empty()) {
    for (auto it = running.begin(); it != running.end();) {
      int status = 0;
      const pid_t got = ::waitpid(it->first, &status, WNOHANG);
      it = got == it->first || (got < 0 && errno == ECHILD) ? running.erase(it) : std::next(it);
    }
    if (running.empty()) break;
    if (Clock::now() > deadline) {
      for (const auto& [pid, r] : running) {
        ::kill(pid, SIGKILL);
        int status = 0;
        while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
      }
      running.clear();
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// Whatever ends the pool (a signal, an exception), no worker outlives it.
class WorkerReaper {
 public:
  explicit WorkerReaper(std::map<pid_t, Running>& running) : running_(running) {}
  ~WorkerReaper() { stop_workers(running_, SIGTERM); }
  WorkerReaper(const WorkerReaper&) = delete;
  WorkerReaper& operator=(const WorkerReaper&) = delete;

 private:
  std::map<pid_t, Running>& running_;
};

// A worker the memory ran out for: it said so, or something (the OOM
// killer, not our timeout) sent it SIGKILL.
bool out_of_memory(const Running& r, int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status) == kWorkerOutOfMemory;
  return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL && !r.timed_out;
}

int cores() {
  const long n = ::sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

}  // namespace

int PoolResult::count(TaskResult r) const { return static_cast<int>(std::count(results.begin(), results.end(), r)); }

long available_memory_bytes() {
  std::ifstream in("/proc/meminfo");  // not an input: a /proc file (st_size 0, always regular)
  std::string name;
  long kib = 0;
  std::string unit;
  while (in >> name >> kib >> unit)
    if (name == "MemAvailable:") return kib * 1024;
  const long pages = ::sysconf(_SC_AVPHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? pages * page : 0;
}

int parallelism_for_memory(long worker_rss_bytes, int running) {
  if (worker_rss_bytes <= 0) return default_parallelism();
  const double per_worker = 1.25 * static_cast<double>(worker_rss_bytes);
  const double memory = static_cast<double>(available_memory_bytes()) + running * static_cast<double>(worker_rss_bytes);
  const double by_memory = std::floor(memory / per_worker);
  return static_cast<int>(std::max(1.0, std::min(static_cast<double>(cores()), by_memory)));
}

int default_parallelism() {
  // One compilation per core, and at least ~1 GiB of available memory each
  // (CLBlast and driver compilers are memory-hungry).
  const long by_memory = available_memory_bytes() >> 30;
  return static_cast<int>(std::max(1L, std::min(static_cast<long>(cores()), by_memory)));
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

  const StopSignals stop_signals;
  const ScratchDir scratch_dir;
  const std::string& scratch = scratch_dir.path();
  std::vector<std::string> dirs(tasks.size()), task_files(tasks.size());
  for (size_t q = 0; q < queue.size(); ++q) {
    const size_t i = queue[q];
    dirs[i] = scratch + "/task-" + std::to_string(q);
    task_files[i] = write_task(tasks[i].work, dirs[i]);
  }

  std::map<pid_t, Running> running;
  const WorkerReaper reaper(running);  // declared after scratch_dir: workers end before it is removed
  PoolProgress progress(stdout);
  int locked = 0, compiled_here = 0;
  // The workers allowed at once: options.parallel, then (measure_memory)
  // what the measured worker peak allows, never above the ceiling that an
  // out-of-memory worker set.
  int limit = options.parallel, memory_ceiling = INT_MAX;
  std::vector<bool> retried(tasks.size(), false);
  LockPolicy lock_policy;
  const auto start = Clock::now();
  auto counts = [&] {
    ProgressCounts c;
    c.total = static_cast<int>(tasks.size());
    c.done = done;
    c.failed = failed;
    c.running = static_cast<int>(running.size());
    c.locked = locked;
    c.compiled_here = compiled_here;
    c.queued_here = static_cast<int>(queue.size() + running.size());
    return c;
  };
  while (!queue.empty() || !running.empty()) {
    if (const int sig = g_stop_signal; sig != 0) {
      const size_t stopped = running.size();
      stop_workers(running, sig);
      progress.finish(counts(), Clock::now());
      const char* name = sigabbrev_np(sig);
      throw Error("precompile stopped by " + (name ? "SIG" + std::string(name) : "signal " + std::to_string(sig)) +
                  ": " + std::to_string(stopped) + " worker(s) stopped, " + std::to_string(done) +
                  " unit(s) already in the cache; its scratch directory " + scratch + " is removed");
    }
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
      if (static_cast<int>(running.size()) >= limit) {
        ++it;
        continue;
      }
      const pid_t pid = options.start_worker(task_files[i], dirs[i] + "/worker.log");
      running[pid] = Running{i, dirs[i], Clock::now(), false};
      out.max_running = std::max(out.max_running, static_cast<int>(running.size()));
      it = queue.erase(it);
    }
    // Reap finished workers (wait4: their peak RSS comes with them); kill
    // those past the timeout.
    for (;;) {
      int status = 0;
      struct rusage usage {};
      pid_t pid = ::wait4(-1, &status, WNOHANG, &usage);
      if (pid <= 0) break;
      auto it = running.find(pid);
      if (it == running.end()) continue;
      const Running r = it->second;
      running.erase(it);
      const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      if (code == kWorkerCompiled || code == kWorkerAlreadyCached) {
        out.worker_peak_rss_bytes = std::max(out.worker_peak_rss_bytes, usage.ru_maxrss * 1024L);  // ru_maxrss is KiB
        if (options.measure_memory)
          limit = std::min(memory_ceiling,
                           parallelism_for_memory(out.worker_peak_rss_bytes, static_cast<int>(running.size())));
      }
      if (code == kWorkerCompiled) {
        out.results[r.index] = TaskResult::Compiled;
        ++done;
        ++compiled_here;
      } else if (code == kWorkerAlreadyCached) {
        out.results[r.index] = TaskResult::Cached;
        ++done;
        ++compiled_here;
      } else if (out_of_memory(r, status) && !retried[r.index]) {
        // Once more, with half as many workers competing for memory.
        retried[r.index] = true;
        ++out.retried_for_memory;
        memory_ceiling = std::max(1, std::min(limit, static_cast<int>(running.size()) + 1) / 2);
        limit = std::min(limit, memory_ceiling);
        queue.insert(queue.begin(), r.index);
        progress.message("precompile: " + tasks[r.index].label + " (key " + tasks[r.index].work.key.substr(0, 16) +
                         ") ran out of memory: " + why_failed(r, status, options.timeout_s) +
                         "; retrying it once with at most " + std::to_string(limit) + " worker(s) at a time");
      } else if (code == kWorkerUnsupported) {
        out.results[r.index] = TaskResult::Fallback;
        ++done;
        progress.message("precompile: unsupported, runs on the cpu fallback: " + tasks[r.index].label + " (key " +
                         tasks[r.index].work.key.substr(0, 16) + "): " + last_line_of_file(r.dir + "/worker.log"));
      } else {
        ++failed;
        progress.message("precompile: FAILED " + tasks[r.index].label + " (key " +
                         tasks[r.index].work.key.substr(0, 16) + "): " + why_failed(r, status, options.timeout_s) +
                         (retried[r.index] ? " (after a retry for memory)" : ""));
      }
    }
    const auto now = Clock::now();
    for (auto& [pid, r] : running)
      if (!r.timed_out && options.timeout_s > 0 &&
          std::chrono::duration<double>(now - r.started).count() > options.timeout_s) {
        r.timed_out = true;
        ::kill(pid, SIGKILL);
      }
    progress.update(counts(), now);
    if (!queue.empty() || !running.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  progress.finish(counts(), Clock::now());
  out.compile_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return out;
}

}  // namespace kiln::compiler_cache
