#include "compiler_cache/compile_pool.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
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
  std::string last_progress;
  auto last_print = Clock::now() - std::chrono::seconds(10);
  int locked = 0;
  LockPolicy lock_policy;
  const auto start = Clock::now();
  while (!queue.empty() || !running.empty()) {
    if (const int sig = g_stop_signal; sig != 0) {
      const size_t stopped = running.size();
      stop_workers(running, sig);
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
      } else if (code == kWorkerUnsupported) {
        out.results[r.index] = TaskResult::Fallback;
        ++done;
        std::printf("precompile: unsupported, runs on the cpu fallback: %s (key %s): %s\n",
                    tasks[r.index].label.c_str(), tasks[r.index].work.key.substr(0, 16).c_str(),
                    last_line_of_file(r.dir + "/worker.log").c_str());
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
  out.compile_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return out;
}

}  // namespace kiln::compiler_cache
