// The precompile worker pool: compiles a list of unique compile units into
// the cache, each in its own worker process, at most `parallel` at once,
// largest first as given, each killed after `timeout_s`. Units already
// cached are skipped, units another process is compiling (a live lock) wait,
// and units that failed before stay failed unless retry_failed. Prints the
// `precompile:` progress and failure lines as it goes.
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
  int parallel = 1;
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
  int count(TaskResult r) const;
};

PoolResult run_compile_pool(const Store& store, const std::vector<PoolTask>& tasks, const PoolOptions& options);

// One compilation per core, and at least ~1 GiB of available memory each.
int default_parallelism();

}  // namespace kiln::compiler_cache
