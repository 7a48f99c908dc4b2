// Test plugin "faults": the real cpu plugin (dlopened from the path baked in
// at build time) with a compile step that can be made to misbehave, for the
// compile-cache tests. Never built into the product; lives in its own
// directory so the default plugin search never finds it.
//
// Debug environment variables (read at each call):
//   KILN_TEST_COMPILE_REJECT=1     compile fails with KILN_ERR_INVALID_ARGUMENT
//                                  (a deterministic error: cached as .failed)
//   KILN_TEST_COMPILE_UNSUPPORTED=1  compile fails with KILN_ERR_UNSUPPORTED
//                                  (the executor runs the piece on cpu instead)
//   KILN_TEST_COMPILE_EMPTY=1      compile succeeds with an empty executable
//   KILN_TEST_MAX_ELEMENTS=N       op_supported_node (ABI 1.2) says no to a
//                                  MATMUL with a tensor of more than N elements
//   KILN_TEST_COMPILE_SLEEP_MS=N   compile sleeps N ms first (to kill it midway)
//   KILN_TEST_COMPILE_CRASH=1      compile aborts the process (a crashing driver)
//   KILN_TEST_COMPILE_ALLOC_MB=N   compile first allocates and touches N MiB, as a
//                                  memory-hungry driver compiler does; when that
//                                  fails it reports KILN_ERR_OUT_OF_MEMORY
//   KILN_TEST_COMPILE_ALLOC_ONCE_DIR=D  with ALLOC_MB: only the first compile of
//                                  each graph allocates (a marker file in D
//                                  remembers it), so a retry can pass
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "kiln/ops.h"
#include "kiln/plugin.h"
#include "real_cpu_plugin.h"

namespace {

const kiln_plugin_api* real_api() { return kiln_test::real_cpu_api(); }

// Errors of our own are told apart from the cpu plugin's by this table.
struct OwnError {
  char message[160];
};
OwnError g_reject = {"the faults test plugin rejects this graph (KILN_TEST_COMPILE_REJECT=1)"};
OwnError g_unsupported = {"the faults test plugin cannot run this graph (KILN_TEST_COMPILE_UNSUPPORTED=1)"};
OwnError g_out_of_memory = {"the faults test plugin ran out of memory (KILN_TEST_COMPILE_ALLOC_MB)"};

bool own(const kiln_error* e) {
  auto* o = reinterpret_cast<const OwnError*>(e);
  return o == &g_reject || o == &g_unsupported || o == &g_out_of_memory;
}

bool env_on(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && std::strcmp(v, "0") != 0;
}

void error_destroy(kiln_error* e) {
  if (!own(e)) real_api()->error_destroy(e);
}
const char* error_message(const kiln_error* e) {
  if (own(e)) return reinterpret_cast<const OwnError*>(e)->message;
  return real_api()->error_message(e);
}
int32_t error_code(const kiln_error* e) {
  if (reinterpret_cast<const OwnError*>(e) == &g_reject) return KILN_ERR_INVALID_ARGUMENT;
  if (reinterpret_cast<const OwnError*>(e) == &g_unsupported) return KILN_ERR_UNSUPPORTED;
  if (reinterpret_cast<const OwnError*>(e) == &g_out_of_memory) return KILN_ERR_OUT_OF_MEMORY;
  return real_api()->error_code(e);
}
const char* compiler_version() { return "faults-1"; }

// Whether this compile should allocate: always, or with ALLOC_ONCE_DIR only
// the first time this graph (named by an FNV-1a hash of its IR) is seen.
bool first_time_for(const kiln_compile_args* args) {
  const char* dir = std::getenv("KILN_TEST_COMPILE_ALLOC_ONCE_DIR");
  if (dir == nullptr || *dir == '\0') return true;
  uint64_t h = 1469598103934665603ULL;
  for (size_t i = 0; i < args->ir_size; ++i) h = (h ^ args->ir[i]) * 1099511628211ULL;
  const std::string marker = std::string(dir) + "/" + std::to_string(h) + ".allocated";
  std::FILE* f = std::fopen(marker.c_str(), "wx");  // exclusive: fails when it exists
  if (f == nullptr) return false;
  std::fclose(f);
  return true;
}

// A memory-hungry compiler: allocates and touches the memory, then frees it.
bool allocate_like_a_driver(const kiln_compile_args* args) {
  const char* mb = std::getenv("KILN_TEST_COMPILE_ALLOC_MB");
  if (mb == nullptr || *mb == '\0' || !first_time_for(args)) return true;
  const size_t bytes = static_cast<size_t>(std::atoll(mb)) << 20;
  void* p = std::malloc(bytes);
  if (p == nullptr) return false;
  std::memset(p, 1, bytes);
  std::free(p);
  return true;
}

kiln_error* compile(kiln_compile_args* args) {
  if (const char* ms = std::getenv("KILN_TEST_COMPILE_SLEEP_MS"))
    std::this_thread::sleep_for(std::chrono::milliseconds(std::atoi(ms)));
  if (env_on("KILN_TEST_COMPILE_CRASH")) std::abort();
  if (!allocate_like_a_driver(args)) return reinterpret_cast<kiln_error*>(&g_out_of_memory);
  if (env_on("KILN_TEST_COMPILE_REJECT")) return reinterpret_cast<kiln_error*>(&g_reject);
  if (env_on("KILN_TEST_COMPILE_UNSUPPORTED")) return reinterpret_cast<kiln_error*>(&g_unsupported);
  if (env_on("KILN_TEST_COMPILE_EMPTY")) {
    args->executable = nullptr;
    args->executable_size = 0;
    return nullptr;
  }
  return real_api()->compile(args);
}

// A backend whose matmul kernel has a size limit.
kiln_error* op_supported_node(kiln_node_supported_args* args) {
  args->supported = 1;
  const char* limit = std::getenv("KILN_TEST_MAX_ELEMENTS");
  if (args->op != KILN_OP_MATMUL || limit == nullptr || *limit == '\0') return nullptr;
  const long long max_elements = std::atoll(limit);
  for (int32_t i = 0; i < args->num_inputs + args->num_outputs; ++i) {
    const kiln_tensor_desc* t = i < args->num_inputs ? KILN_TENSOR_DESC_AT(args->inputs, i)
                                                     : KILN_TENSOR_DESC_AT(args->outputs, i - args->num_inputs);
    long long elements = 1;
    for (int32_t d = 0; d < t->rank; ++d) elements *= t->dims[d];
    if (elements > max_elements) args->supported = 0;
  }
  return nullptr;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) const kiln_plugin_api* kiln_plugin_get_api(void) {
  static kiln_plugin_api table = [] {
    kiln_plugin_api t = kiln_test::real_cpu_table("faults");
    if (t.struct_size == 0) return t;
    t.error_destroy = error_destroy;
    t.error_message = error_message;
    t.error_code = error_code;
    t.compiler_version = compiler_version;
    t.compile = compile;
    t.op_supported_node = op_supported_node;
    return t;
  }();
  return &table;
}
