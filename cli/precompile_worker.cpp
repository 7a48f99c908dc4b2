// `kiln precompile --worker TASK.json`: one compilation in its own process,
// so a crashing driver or a timeout kills one task, not the precompile run.
// Exit status: 0 compiled, 10 already cached (by another process), 11 a
// cached failure marker (no --retry-failed), 1 the compile failed (marker
// written when the error is deterministic); a signal means it crashed.
#include <fstream>

#include "cli/precompile_task.h"
#include "compiler_cache/atomic_file.h"
#include "compiler_cache/compile_cache.h"
#include "core/log.h"
#include "core/registry.h"

namespace kiln::cli {

int run_precompile_worker(const std::string& task_file, const compiler_cache::CacheConfig& config) {
  nlohmann::json task;
  try {
    std::ifstream in(task_file);
    task = nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    throw Error("precompile worker: cannot read task " + task_file + ": " + e.what());
  }
  const std::string backend = task.at("backend").get<std::string>();
  std::shared_ptr<const Plugin> plugin = Registry::instance().find(backend);
  if (!plugin) {
    PluginRecord r = Registry::instance().load_file(task.at("plugin_path").get<std::string>());
    if (!r.loaded) throw Error("precompile worker: backend " + backend + " is not available: " + r.reason);
    plugin = r.plugin;
  }
  const std::vector<uint8_t> ir = compiler_cache::read_file(task.at("ir_file").get<std::string>());
  compiler_cache::configure(config);
  compiler_cache::CompileRequest request;
  request.plugin = plugin.get();
  request.device_index = task.at("device_index").get<int>();
  request.device_fingerprint = compiler_cache::device_fingerprint(*plugin, request.device_index);
  request.ir = &ir;
  request.summary = task.at("summary");
  std::string message;
  switch (compiler_cache::compile_into_cache(request, &message)) {
    case compiler_cache::Outcome::Compiled: return kWorkerCompiled;
    case compiler_cache::Outcome::AlreadyCached: return kWorkerAlreadyCached;
    case compiler_cache::Outcome::FailedBefore:
      std::fprintf(stderr, "%s\n", message.c_str());
      return kWorkerFailedBefore;
    case compiler_cache::Outcome::Failed: std::fprintf(stderr, "%s\n", message.c_str()); return kWorkerFailed;
  }
  return kWorkerFailed;
}

}  // namespace kiln::cli
