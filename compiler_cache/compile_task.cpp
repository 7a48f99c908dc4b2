// `kiln precompile --worker TASK.json`: one compilation in its own process,
// so a crashing driver or a timeout kills one task, not the precompile run.
// Exit status: 0 compiled, 10 already cached (by another process), 11 a
// cached failure marker (no --retry-failed), 12 out of memory, 13 the
// plugin refused the graph as unsupported (it runs on the cpu fallback), 1
// the compile failed (marker written when the error is deterministic); a
// signal means it crashed.
#include "compiler_cache/compile_task.h"

#include <sys/resource.h>

#include <cstdlib>
#include <new>

#include "compiler_cache/atomic_file.h"
#include "core/log.h"
#include "core/registry.h"
#include "core/regular_file.h"

namespace kiln::compiler_cache {

std::string write_task(const ExtractedTask& work, const std::string& dir) {
  make_dirs(dir);
  const std::string ir_file = dir + "/graph.ir";
  write_file_atomically(ir_file, work.ir.data(), work.ir.size());
  // The worker is a fresh process: it loads the backend's plugin from here
  // when the plugin path search does not find it by name.
  const std::shared_ptr<const Plugin> plugin = Registry::instance().find(work.backend);
  nlohmann::json j = {{"backend", work.backend},
                      {"plugin_path", plugin ? plugin->path : ""},
                      {"device_index", work.device_index},
                      {"ir_file", ir_file},
                      {"summary", work.summary}};
  const std::string text = j.dump();
  std::string task_file = dir + "/task.json";
  write_file_atomically(task_file, text.data(), text.size());
  return task_file;
}

namespace {

// Test hook (tests/cache/worker_memory.sh): KILN_TEST_WORKER_MAX_VIRTUAL_MB
// caps this worker's address space (RLIMIT_AS), the way `ulimit -v` would,
// without also limiting the parent that extracts the graphs.
void limit_memory_for_tests() {
  const char* mb = std::getenv("KILN_TEST_WORKER_MAX_VIRTUAL_MB");
  if (mb == nullptr || *mb == '\0') return;
  const rlim_t bytes = static_cast<rlim_t>(std::strtoull(mb, nullptr, 10)) << 20;
  const struct rlimit limit = {bytes, bytes};
  if (::setrlimit(RLIMIT_AS, &limit) != 0) std::perror("setrlimit(RLIMIT_AS)");
}

}  // namespace

int run_task(const std::string& task_file, const CacheConfig& config) {
  nlohmann::json task;
  try {
    task = nlohmann::json::parse(read_input({task_file, "precompile task", "", kMaxJsonConfigBytes}));
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
  const std::vector<uint8_t> ir = read_file(task.at("ir_file").get<std::string>());
  configure(config);
  CompileRequest request;
  request.plugin = plugin.get();
  request.device_index = task.at("device_index").get<int>();
  request.device_fingerprint = device_fingerprint(*plugin, request.device_index);
  request.ir = &ir;
  request.summary = task.at("summary");
  limit_memory_for_tests();
  std::string message;
  Outcome outcome = Outcome::Failed;
  try {
    outcome = compile_into_cache(request, &message);
  } catch (const std::bad_alloc&) {
    outcome = Outcome::OutOfMemory;
    message = "out of memory while compiling (std::bad_alloc)";
  }
  record_usage();
  switch (outcome) {
    case Outcome::OutOfMemory: std::fprintf(stderr, "%s\n", message.c_str()); return kWorkerOutOfMemory;
    case Outcome::Compiled: return kWorkerCompiled;
    case Outcome::AlreadyCached: return kWorkerAlreadyCached;
    case Outcome::FailedBefore: std::fprintf(stderr, "%s\n", message.c_str()); return kWorkerFailedBefore;
    case Outcome::Failed: std::fprintf(stderr, "%s\n", message.c_str()); return kWorkerFailed;
    case Outcome::Unsupported: std::fprintf(stderr, "%s\n", message.c_str()); return kWorkerUnsupported;
  }
  return kWorkerFailed;
}

}  // namespace kiln::compiler_cache
