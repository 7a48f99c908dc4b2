// Fuzz target: the serialized IR a plugin receives (include/kiln/ir.h).
//
// The same bytes go through
//   1. kiln::ir::decode, the SDK's header-only decoder (include/kiln/ir_decode.hpp);
//   2. the CPU plugin's compile through its C ABI (kiln_plugin_get_api()->compile),
//      which decodes and plans every node, and, when it accepts them, load of
//      the executable it produced on an open device;
//   3. the CPU plugin's load, as if they were executable bytes handed back by
//      a compile cache.
// None may crash, and the answers must agree: compile rejects what the
// decoder rejects, load accepts what compile produced, and failures are
// kiln_errors with a reason and a proper code, never an escaped exception.
// Graphs the plugin accepts that are small enough (slot buffers up to 1 MiB,
// at most 64 nodes) are also executed on zero-filled buffers, so a gap in the
// plugin's validation shows up as an out-of-bounds access in a kernel.
//
// The CPU plugin's code is linked in (backends/cpu/plugin.cpp + the kernels
// library), so its entry points are called directly, not through dlopen.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "fuzz_util.h"
#include "kiln/ir_decode.hpp"
#include "kiln/plugin.h"

extern "C" const kiln_plugin_api* kiln_plugin_get_api(void);

namespace {

const kiln_plugin_api* g_api = nullptr;
kiln_device* g_device = nullptr;

// Frees e; checks it carries a reason and one of the codes bad input may get.
void expect_rejection(kiln_error* e, const char* call) {
  const int32_t code = g_api->error_code(e);
  const std::string message = g_api->error_message(e);
  g_api->error_destroy(e);
  KILN_FUZZ_CHECK(!message.empty(), std::string(call) + " failed without a message");
  KILN_FUZZ_CHECK(code == KILN_ERR_CORRUPT || code == KILN_ERR_UNSUPPORTED || code == KILN_ERR_INVALID_ARGUMENT,
                  std::string(call) + " failed with code " + std::to_string(code) + ": " + message);
}

// Runs a loaded graph on zero-filled buffers when it is small.
void try_execute(const kiln::ir::DecodedGraph& g, kiln_loaded_executable* loaded) {
  constexpr uint64_t kMaxSlotBytes = uint64_t{1} << 20;
  if (g.nodes.size() > 64) return;
  std::vector<uint64_t> slot_bytes(g.num_slots, 64);
  for (const auto& v : g.values) {
    if (v.bytes() > kMaxSlotBytes || v.offset > kMaxSlotBytes) return;
    slot_bytes[v.slot] = std::max(slot_bytes[v.slot], v.offset + v.bytes());
  }
  slot_bytes[0] = std::max(slot_bytes[0], g.arena_bytes);
  for (uint64_t b : slot_bytes)
    if (b > kMaxSlotBytes) return;

  std::vector<kiln_buffer*> slots(g.num_slots, nullptr);
  bool ok = true;
  for (size_t s = 0; s < slots.size() && ok; ++s) {
    kiln_buffer_alloc_args a{};
    a.struct_size = sizeof(a);
    a.device = g_device;
    a.size_bytes = slot_bytes[s];
    kiln_error* e = g_api->buffer_alloc(&a);
    KILN_FUZZ_CHECK(e == nullptr, "cannot allocate a 1 MiB buffer");
    slots[s] = a.buffer;
    std::vector<uint8_t> zeros(slot_bytes[s], 0);
    kiln_buffer_transfer_args w{};
    w.struct_size = sizeof(w);
    w.device = g_device;
    w.buffer = a.buffer;
    w.size_bytes = slot_bytes[s];
    w.host = zeros.data();
    ok = g_api->buffer_write(&w) == nullptr;
  }
  KILN_FUZZ_CHECK(ok, "buffer_write failed");
  kiln_execute_args x{};
  x.struct_size = sizeof(x);
  x.device = g_device;
  x.loaded = loaded;
  x.slots = slots.data();
  x.num_slots = static_cast<int32_t>(slots.size());
  if (kiln_error* e = g_api->execute(&x)) expect_rejection(e, "execute");
  for (kiln_buffer* b : slots) g_api->buffer_free(g_device, b);
}

// Loads executable bytes on the device; returns whether load accepted them.
// `graph`, when given, is what the bytes hold: the loaded graph is run.
bool try_load(const uint8_t* bytes, size_t size, bool must_succeed, const kiln::ir::DecodedGraph* graph = nullptr) {
  kiln_load_args l{};
  l.struct_size = sizeof(l);
  l.device = g_device;
  l.executable = bytes;
  l.executable_size = size;
  kiln_error* e = g_api->load(&l);
  if (e == nullptr) {
    KILN_FUZZ_CHECK(l.loaded != nullptr, "load succeeded without a loaded executable");
    if (graph != nullptr) try_execute(*graph, l.loaded);
    g_api->loaded_free(g_device, l.loaded);
    return true;
  }
  if (must_succeed) {
    std::string message = g_api->error_message(e);
    g_api->error_destroy(e);
    KILN_FUZZ_CHECK(false, "load refused what compile produced: " + message);
  }
  expect_rejection(e, "load");
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // kiln's own GEMM for every MATMUL: the per-shape choice times both
  // kernels at compile (gemm_choice.h), which is measurement, not
  // validation, and would spend each input's time budget on GEMMs of the
  // shapes the fuzzer declares. Its policies have unit tests of their own.
  setenv("KILN_CPU_GEMM", "kiln", 1);
  g_api = kiln_plugin_get_api();
  kiln_device_open_args open{};
  open.struct_size = sizeof(open);
  open.device_index = 0;
  open.num_threads = 1;
  kiln_error* e = g_api->device_open(&open);
  KILN_FUZZ_CHECK(e == nullptr, "cannot open the cpu device");
  g_device = open.device;
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // 1. The SDK decoder.
  kiln::ir::DecodedGraph graph;
  const std::string decode_error = kiln::ir::decode(data, size, &graph);
  if (decode_error.empty()) {
    KILN_FUZZ_CHECK(graph.num_slots >= 1, "decoded a graph without slots");
    for (const auto& node : graph.nodes) {
      for (uint32_t v : node.inputs) KILN_FUZZ_CHECK(v < graph.values.size(), "input id out of range");
      for (uint32_t v : node.outputs) KILN_FUZZ_CHECK(v < graph.values.size(), "output id out of range");
    }
    for (const auto& v : graph.values) {
      KILN_FUZZ_CHECK(v.slot < graph.num_slots, "slot out of range");
      KILN_FUZZ_CHECK(v.offset <= UINT64_MAX - v.bytes(), "value offset + size wraps around");
    }
  }

  // 2. The CPU plugin's compile, then load of what it produced.
  kiln_compile_args c{};
  c.struct_size = sizeof(c);
  c.ir = data;
  c.ir_size = size;
  c.device_index = 0;
  if (kiln_error* e = g_api->compile(&c)) {
    expect_rejection(e, "compile");
  } else {
    KILN_FUZZ_CHECK(decode_error.empty(), "compile accepted IR the decoder rejects: " + decode_error);
    KILN_FUZZ_CHECK(c.executable != nullptr && c.executable_size > 0, "compile produced no executable");
    try_load(c.executable, c.executable_size, /*must_succeed=*/true, &graph);
    g_api->executable_bytes_free(c.executable);
  }

  // 3. The bytes as a CPU executable.
  try_load(data, size, /*must_succeed=*/false);
  return 0;
}
