// The precompile worker pool: compiles a list of unique compile units into
// the cache, each in its own worker process, at most `parallel` at once,
// largest first as given, each killed after `timeout_s`. Units already
// cached are skipped, units another process is compiling (a live lock) wait,
// and units that failed before stay failed unless retry_failed. A worker
// that ran out of memory (its exit status says so, or the OOM killer's
// SIGKILL) is run once more with half as many workers beside it. Prints the
// `precompile:` progress (compiler_cache/pool_progress.h) and failure lines
// as it goes.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

#include "compiler_cache/compile_cache.h"
#include "compiler_cache/store.h"

namespace kiln::compiler_cache {

struct PoolTask {
  ExtractedTask work;
  std::string label;  // the graph it came from, for messages
};

// Starts one worker for the task file, its stdout and stderr going to
// `log_file`; returns its process id. The pool reaps it with waitpid.
using StartWorker = std::function<pid_t(const std::string& task_file, const std::string& log_file)>;

struct PoolOptions {
  int parallel = 1;  // the most workers at once
  // `parallel` is only a starting point: once workers finish, their peak
  // RSS (wait4's rusage) sets it to min(cores, available memory / that peak).
  bool measure_memory = false;
  double timeout_s = 0;  // 0: no timeout
  bool retry_failed = false;
  StartWorker start_worker;
};

// Fallback: the plugin refused the graph as unsupported; it runs on the cpu
// fallback, which is not a failure.
enum class TaskResult { Cached, Compiled, Failed, Fallback };

struct PoolResult {
  std::vector<TaskResult> results;  // one per task, in the tasks' order
  double compile_seconds = 0;       // from the first worker's start to the last one's end
  int max_running = 0;              // the most workers that ran at once
  int retried_for_memory = 0;       // workers run again after running out of memory
  long worker_peak_rss_bytes = 0;   // the largest finished worker's peak RSS (0: none finished)
  int count(TaskResult r) const;
};

PoolResult run_compile_pool(const Store& store, const std::vector<PoolTask>& tasks, const PoolOptions& options);

// One compilation per core, and at least ~1 GiB of available memory each:
// the conservative start before any worker's memory has been measured.
int default_parallelism();

// min(cores, (available memory + what `running` workers already hold) /
// `worker_rss_bytes` with a 25% margin), at least 1.
int parallelism_for_memory(long worker_rss_bytes, int running);

// MemAvailable from /proc/meminfo (free pages where it is missing).
long available_memory_bytes();

}  // namespace kiln::compiler_cache
