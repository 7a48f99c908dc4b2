// One precompile task as files on disk, and what a worker process does with
// it: `kiln precompile` writes a task (task.json + graph.ir) per unique
// compile unit, a worker (`kiln precompile --worker TASK.json`) compiles it
// into the cache in its own process, and its exit status says how it went.
#pragma once

#include <string>

#include "compiler_cache/compile_cache.h"

namespace kiln::compiler_cache {

// A worker's exit statuses; a signal means it crashed.
inline constexpr int kWorkerCompiled = 0;
inline constexpr int kWorkerFailed = 1;
inline constexpr int kWorkerAlreadyCached = 10;
inline constexpr int kWorkerFailedBefore = 11;
// Out of memory (std::bad_alloc, or the plugin's KILN_ERR_OUT_OF_MEMORY):
// the pool runs it once more at lower parallelism.
inline constexpr int kWorkerOutOfMemory = 12;
inline constexpr int kWorkerUnsupported = 13;  // the graph runs on the cpu fallback

// Writes `dir`/task.json and `dir`/graph.ir for `work` (creating `dir`);
// returns the task file's path.
std::string write_task(const ExtractedTask& work, const std::string& dir);

// The worker's body: reads the task file, compiles it into the cache that
// `config` names, and returns one of the exit statuses above.
int run_task(const std::string& task_file, const CacheConfig& config);

}  // namespace kiln::compiler_cache
