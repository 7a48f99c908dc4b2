// Test plugin "execfaults": the real cpu plugin (dlopened from the path
// baked in at build time) whose execute misbehaves for graphs that contain
// one op, for the crash-isolation tests of check-backend and the one-line
// fatal-signal report of train and generate. Never built into the product;
// lives in the test-plugins directory, which the default search never sees.
//
// Debug environment variables (read at compile and execute):
//   KILN_TEST_CRASH_OP=NAME   the op (its ops.h name, e.g. silu) whose graphs
//                             misbehave in execute; unset: none does
//   KILN_TEST_CRASH_HOW=segv  (default) write to an unmapped address
//                      abort  abort()
//                      hang   sleep until killed
//                      throw  let a C++ exception escape execute
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>

#include "kiln/ir_decode.hpp"
#include "kiln/ops.h"
#include "kiln/plugin.h"
#include "real_cpu_plugin.h"

namespace {

const kiln_plugin_api* real_api() { return kiln_test::real_cpu_api(); }

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// The executable is the cpu plugin's, after one byte: 1 if the graph holds
// the crash op. The version names the op and the way, so that a compile
// cache never hands one setting's executables to another.
const char* compiler_version() {
  static const std::string version = "execfaults-1-" + env("KILN_TEST_CRASH_OP") + "-" + env("KILN_TEST_CRASH_HOW");
  return version.c_str();
}

bool holds_crash_op(const uint8_t* ir, size_t size) {
  const std::string op = env("KILN_TEST_CRASH_OP");
  if (op.empty()) return false;
  kiln::ir::DecodedGraph g;
  if (!kiln::ir::decode(ir, size, &g).empty()) return false;  // the cpu plugin's compile says why
  return std::any_of(g.nodes.begin(), g.nodes.end(),
                     [&](const kiln::ir::DecodedNode& n) { return op == kiln_op_name(static_cast<int>(n.op)); });
}

kiln_error* compile(kiln_compile_args* args) {
  const bool crash = holds_crash_op(args->ir, args->ir_size);
  if (kiln_error* e = real_api()->compile(args)) return e;
  auto* bytes = static_cast<uint8_t*>(std::malloc(args->executable_size + 1));
  bytes[0] = crash ? 1 : 0;
  std::memcpy(bytes + 1, args->executable, args->executable_size);
  real_api()->executable_bytes_free(args->executable);
  args->executable = bytes;
  args->executable_size += 1;
  return nullptr;
}

void executable_bytes_free(uint8_t* bytes) { std::free(bytes); }

std::mutex g_mutex;
std::set<const kiln_loaded_executable*> g_crashing;

kiln_error* load(kiln_load_args* args) {
  if (args->executable_size < 1) return real_api()->load(args);  // the cpu plugin refuses it
  const bool crash = args->executable[0] == 1;
  kiln_load_args inner = *args;
  inner.executable = args->executable + 1;
  inner.executable_size = args->executable_size - 1;
  if (kiln_error* e = real_api()->load(&inner)) return e;
  args->loaded = inner.loaded;
  if (crash) {
    const std::lock_guard<std::mutex> lock(g_mutex);
    g_crashing.insert(inner.loaded);
  }
  return nullptr;
}

void loaded_free(kiln_device* device, kiln_loaded_executable* loaded) {
  {
    const std::lock_guard<std::mutex> lock(g_mutex);
    g_crashing.erase(loaded);
  }
  real_api()->loaded_free(device, loaded);
}

// Read at run time (volatile), so the compiler cannot turn the write
// through it into a trap instruction: a real SIGSEGV.
int* volatile g_unmapped = nullptr;

kiln_error* execute(kiln_execute_args* args) {
  bool crash = false;
  {
    const std::lock_guard<std::mutex> lock(g_mutex);
    crash = g_crashing.count(args->loaded) != 0;
  }
  if (crash) {
    const std::string how = env("KILN_TEST_CRASH_HOW");
    if (how == "abort") std::abort();
    if (how == "hang")
      for (;;) ::sleep(1);
    if (how == "throw") throw std::runtime_error("execfaults: a deliberate exception from execute");
    *g_unmapped = 1;
  }
  return real_api()->execute(args);
}

}  // namespace

extern "C" __attribute__((visibility("default"))) const kiln_plugin_api* kiln_plugin_get_api(void) {
  static kiln_plugin_api table = [] {
    kiln_plugin_api t = kiln_test::real_cpu_table("execfaults");
    if (t.struct_size == 0) return t;
    t.compiler_version = compiler_version;
    t.compile = compile;
    t.executable_bytes_free = executable_bytes_free;
    t.load = load;
    t.loaded_free = loaded_free;
    t.execute = execute;
    return t;
  }();
  return &table;
}
