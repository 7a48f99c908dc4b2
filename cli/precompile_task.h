// What `kiln precompile` and its worker processes agree on: the exit
// statuses of a worker and how it is started.
#pragma once

#include <string>

#include "compiler_cache/compile_cache.h"

namespace kiln::cli {

inline constexpr int kWorkerCompiled = 0;
inline constexpr int kWorkerFailed = 1;
inline constexpr int kWorkerAlreadyCached = 10;
inline constexpr int kWorkerFailedBefore = 11;

int run_precompile_worker(const std::string& task_file, const compiler_cache::CacheConfig& config);

}  // namespace kiln::cli
