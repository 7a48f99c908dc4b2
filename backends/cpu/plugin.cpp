// libkiln-backend-cpu.so: the kiln plugin ABI (kiln/plugin.h) over the CPU
// kernels.
//
// compile validates the IR and wraps it in a small versioned container (the
// CPU has nothing to precompute yet; a kernel-plan section can be appended
// later without changing the format). load decodes and plans every node;
// execute binds value addresses from the slot buffers and runs the nodes in
// order on the device's thread pool, synchronously.
//
// The C boundary (argument checks, errors, the function table, the
// executable container) is the plugin kit's (kiln/plugin_kit.hpp): this file
// is the device part, the CpuPlugin class at the end.
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "kernels.h"
#include "kiln/ir_decode.hpp"
#include "kiln/plugin.h"
#include "kiln/plugin_kit.hpp"
#include "lowp_features.h"
#include "plan.h"
#include "thread_pool.h"

// Bump whenever generated code or the executable format changes: it keys the
// compile cache.
#define KILN_CPU_COMPILER_VERSION "cpu-3"  // 2: the tensor-parallel ops; 3: the kit's container

struct kiln_device {
  int threads = 1;
  bool avx2 = false;
  kiln::cpu::RunNodeFn run_node = nullptr;
  std::unique_ptr<kiln::cpu::ThreadPool> pool;
  // One single-threaded pool per worker, for work items (e.g. batched small
  // GEMMs) that each run on one thread.
  std::vector<std::unique_ptr<kiln::cpu::ThreadPool>> solo;
  std::vector<kiln::cpu::ThreadPool*> solo_ptrs;
  // execute is not reentrant (the pool runs one job at a time); this also
  // guards the scratch buffer.
  std::mutex mutex;
  void* scratch = nullptr;
  uint64_t scratch_bytes = 0;
  // KILN_CPU_PROFILE=1: time spent per op (and per matmul shape, with its
  // GFLOP/s), printed to stderr at close.
  bool profile = false;
  kiln::plugin_kit::ProfileTable times;
  ~kiln_device();
};

struct kiln_buffer {
  void* data = nullptr;
  uint64_t size = 0;
};

struct kiln_loaded_executable {
  kiln::ir::DecodedGraph graph;
  std::vector<kiln::cpu::NodePlan> plans;
  std::vector<uint64_t> slot_bytes;  // bytes each slot must hold
  uint64_t scratch_bytes = 0;
  std::vector<void*> addresses;         // per value, rebound at every execute
  const kiln_device* device = nullptr;  // the device it was loaded on
};

namespace {

using kiln::cpu::NodePlan;

using kiln::plugin_kit::fail;

constexpr kiln::plugin_kit::ContainerFormat kFormat{
    {'K', 'I', 'L', 'N', 'C', 'P', 'U', '1'}, 2, "cpu", KILN_CPU_COMPILER_VERSION};
enum : uint32_t { kSectionIR = 1 };
constexpr uint64_t kAlign = 64;

void check_device_index(int32_t index) {
  if (index != 0)
    fail(KILN_ERR_INVALID_ARGUMENT,
         "device index " + std::to_string(index) + " out of range (the cpu backend has 1 device)");
}

// ---------------------------------------------------------------- host info

int hardware_threads() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

bool cpu_has_avx2_fma() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  return false;
#endif
}

struct HostInfo {
  std::string model = "cpu";
  std::string vendor = "unknown";
  bool avx2 = false;  // the CPU supports the AVX2+FMA kernels
  int threads = 1;
  uint64_t memory = 0;
};

const HostInfo& host_info() {
  static const HostInfo info = [] {
    HostInfo h;
    std::ifstream f("/proc/cpuinfo");
    std::string line;
    auto value = [](const std::string& l) {
      size_t colon = l.find(':');
      std::string v = colon == std::string::npos ? std::string() : l.substr(colon + 1);
      size_t b = v.find_first_not_of(" \t"), e = v.find_last_not_of(" \t\r\n");
      return b == std::string::npos ? std::string() : v.substr(b, e - b + 1);
    };
    bool have_model = false, have_vendor = false;
    while (std::getline(f, line) && !(have_model && have_vendor)) {
      if (!have_model && line.rfind("model name", 0) == 0) {
        std::string v = value(line);
        if (!v.empty()) h.model = v, have_model = true;
      } else if (!have_vendor && line.rfind("vendor_id", 0) == 0) {
        std::string v = value(line);
        if (v == "GenuineIntel")
          h.vendor = "Intel";
        else if (v == "AuthenticAMD")
          h.vendor = "AMD";
        else if (!v.empty())
          h.vendor = v;
        have_vendor = true;
      }
    }
    h.avx2 = cpu_has_avx2_fma();
    h.threads = hardware_threads();
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    if (pages > 0 && page > 0) h.memory = static_cast<uint64_t>(pages) * static_cast<uint64_t>(page);
    return h;
  }();
  return info;
}

// Read at every device open (not cached) so tests can run both kernel sets
// in one process: KILN_CPU_DISABLE_AVX2=1 selects the baseline kernels.
bool use_avx2() {
  const char* off = std::getenv("KILN_CPU_DISABLE_AVX2");
  if (off != nullptr && *off != '\0' && std::strcmp(off, "0") != 0) return false;
  return host_info().avx2;
}

std::string device_fingerprint() {
  return kiln::plugin_kit::fingerprint_hex(host_info().model + "|avx2=" + (use_avx2() ? "1" : "0") + "|" +
                                           KILN_CPU_COMPILER_VERSION);
}

void* aligned_bytes(uint64_t bytes) {
  uint64_t rounded = (std::max<uint64_t>(bytes, 1) + kAlign - 1) / kAlign * kAlign;
  if (rounded < bytes) return nullptr;  // overflow
  return std::aligned_alloc(kAlign, rounded);
}

// The one list op_supported and compile read: kernels_dispatch.cpp's, where
// each op's kernel is called.
bool is_supported(int32_t op) {
  using kiln::cpu::base::kSupportedOps;
  // Compared as integers: a code outside the table is not a valid kiln_op.
  return std::any_of(kSupportedOps.begin(), kSupportedOps.end(),
                     [op](kiln_op o) { return static_cast<int32_t>(o) == op; });
}

// Decodes and plans IR bytes; fails with the plan's error code.
void decode_and_plan(const uint8_t* ir, size_t size, kiln::ir::DecodedGraph* g, std::vector<NodePlan>* plans) {
  std::string err = kiln::ir::decode(ir, size, g);
  if (!err.empty()) {
    // An op code from a newer IR is a capability gap, not corruption.
    int32_t code = err.rfind("IR node has unknown op", 0) == 0 ? KILN_ERR_UNSUPPORTED : KILN_ERR_CORRUPT;
    if (code == KILN_ERR_UNSUPPORTED) err += " (not supported by the cpu backend)";
    fail(code, err);
  }
  // An op outside the list is a capability gap whatever its shapes: refused
  // before validation.
  for (size_t i = 0; i < g->nodes.size(); ++i)
    if (!is_supported(g->nodes[i].op))
      fail(KILN_ERR_UNSUPPORTED, "node " + std::to_string(i) + ": op " + kiln::cpu::op_name(g->nodes[i].op) +
                                     " is not supported by the cpu backend");
  kiln::cpu::PlanError pe = kiln::cpu::plan_graph(*g, plans);
  if (pe) fail(pe.code, pe.message);
}

// Ops whose integer inputs index something: checked before they run (the
// ids may be computed by earlier nodes, so this cannot happen at load).
void check_ids(const NodePlan& p, size_t node, void* const* values) {
  const int32_t* ids = nullptr;
  int64_t count = 0, limit = 0;
  const char* what = "id";
  switch (p.op) {
    case KILN_OP_EMBEDDING:
    case KILN_OP_EMBEDDING_GRAD:
      ids = static_cast<const int32_t*>(values[p.in[1]]);
      count = p.rows;
      limit = p.vocab;
      break;
    case KILN_OP_CROSS_ENTROPY:
    case KILN_OP_CROSS_ENTROPY_GRAD:
      ids = static_cast<const int32_t*>(values[p.in[1]]);
      count = p.rows;
      limit = p.cols;
      what = "target";
      break;
    default: return;
  }
  for (int64_t i = 0; i < count; ++i)
    if (ids[i] < 0 || ids[i] >= limit)
      fail(KILN_ERR_INVALID_ARGUMENT, "node " + std::to_string(node) + " (" + kiln::cpu::op_name(p.op) + "): " + what +
                                          " " + std::to_string(ids[i]) + " at position " + std::to_string(i) +
                                          " is out of range [0, " + std::to_string(limit) + ")");
}

void record_profile(kiln_device* dev, const NodePlan& node, double seconds) {
  dev->times.add(kiln::cpu::op_name(node.op), seconds);
  if (node.op != KILN_OP_MATMUL) return;
  std::string shape = "matmul " + std::to_string(node.batch) + "x" + std::to_string(node.m) + "x";
  shape += std::to_string(node.n) + "x" + std::to_string(node.k) + (node.trans_a ? " ta" : "");
  shape += node.trans_b ? " tb" : "";
  dev->times.add(shape, seconds,
                 2.0 * static_cast<double>(node.batch) * static_cast<double>(node.m) * static_cast<double>(node.n) *
                     static_cast<double>(node.k));
}

}  // namespace

kiln_device::~kiln_device() {
  if (profile) {
    const std::string title = "kiln cpu profile (" + std::to_string(threads) + " threads, ";
    times.print(stderr, title + (avx2 ? "avx2" : "baseline") + " kernels)", "calls");
  }
  std::free(scratch);
}

namespace {

// The device part; the kit (kiln/plugin_kit.hpp) makes the C entry points.
struct CpuPlugin {
  static constexpr const char* kName = "cpu";
  static constexpr const char* kCompilerVersion = KILN_CPU_COMPILER_VERSION;

  static int32_t device_count() { return 1; }

  static kiln::plugin_kit::DeviceProperties device_properties(int32_t index) {
    check_device_index(index);
    const HostInfo& h = host_info();
    return {h.model,  h.vendor,  KILN_CPU_COMPILER_VERSION, KILN_DEVICE_CPU,
            h.memory, h.threads, device_fingerprint(),      kiln::cpu::low_precision_features()};
  }

  static kiln_device* device_open(int32_t index, int32_t num_threads) {
    check_device_index(index);
    if (num_threads < 0)
      fail(KILN_ERR_INVALID_ARGUMENT, "num_threads must be >= 0, got " + std::to_string(num_threads));
    auto dev = std::make_unique<kiln_device>();
    dev->threads = num_threads > 0 ? num_threads : host_info().threads;
    dev->avx2 = use_avx2();
    dev->profile = kiln::plugin_kit::env_flag("KILN_CPU_PROFILE");
    dev->run_node = dev->avx2 ? &kiln::cpu::avx2::run_node : &kiln::cpu::base::run_node;
    try {
      dev->pool = std::make_unique<kiln::cpu::ThreadPool>(dev->threads);
    } catch (const kiln::cpu::ThreadStartError& e) {
      fail(KILN_ERR_DEVICE, e.what());
    }
    for (int t = 0; t < dev->threads; ++t) {
      dev->solo.push_back(std::make_unique<kiln::cpu::ThreadPool>(1));
      dev->solo_ptrs.push_back(dev->solo.back().get());
    }
    return dev.release();
  }

  static kiln_buffer* buffer_alloc(kiln_device*, uint64_t size) {
    void* data = aligned_bytes(size);
    if (data == nullptr) fail(KILN_ERR_OUT_OF_MEMORY, "cannot allocate a buffer of " + std::to_string(size) + " bytes");
    return new kiln_buffer{data, size};
  }
  static void buffer_free(kiln_device*, kiln_buffer* buffer) {
    std::free(buffer->data);
    delete buffer;
  }
  static uint64_t buffer_size(const kiln_buffer* b) { return b->size; }
  static void buffer_write(kiln_device*, kiln_buffer* b, uint64_t offset, const void* host, uint64_t size) {
    std::memcpy(static_cast<uint8_t*>(b->data) + offset, host, size);
  }
  static void buffer_read(kiln_device*, kiln_buffer* b, uint64_t offset, void* host, uint64_t size) {
    std::memcpy(host, static_cast<const uint8_t*>(b->data) + offset, size);
  }
  static void buffer_copy(kiln_device*, kiln_buffer* src, uint64_t src_offset, kiln_buffer* dst, uint64_t dst_offset,
                          uint64_t size) {
    // memmove: source and destination may be ranges of one buffer.
    std::memmove(static_cast<uint8_t*>(dst->data) + dst_offset, static_cast<const uint8_t*>(src->data) + src_offset,
                 size);
  }

  // The CPU has nothing to precompute yet: the executable is the checked IR
  // (a kernel-plan section can be appended later).
  static std::vector<uint8_t> compile(const kiln_compile_args& args) {
    check_device_index(args.device_index);
    kiln::ir::DecodedGraph g;
    std::vector<NodePlan> plans;
    decode_and_plan(args.ir, args.ir_size, &g, &plans);
    kiln::plugin_kit::Container c{{KILN_CPU_COMPILER_VERSION, device_fingerprint(), host_info().model},
                                  {{kSectionIR, args.ir, args.ir_size}}};
    return kiln::plugin_kit::write_container(kFormat, c);
  }

  static kiln_loaded_executable* load(kiln_device* device, const uint8_t* bytes, size_t size) {
    const kiln::plugin_kit::Container c = kiln::plugin_kit::read_container(kFormat, bytes, size);
    const kiln::plugin_kit::Section* ir = c.find(kSectionIR);
    if (ir == nullptr) fail(KILN_ERR_CORRUPT, "cpu executable has no IR section");
    auto loaded = std::make_unique<kiln_loaded_executable>();
    decode_and_plan(ir->data, ir->size, &loaded->graph, &loaded->plans);
    const auto& g = loaded->graph;
    loaded->slot_bytes.assign(g.num_slots, 0);
    for (const auto& v : g.values)
      loaded->slot_bytes[v.slot] = std::max(loaded->slot_bytes[v.slot], v.offset + v.bytes());
    const NodePlan* largest = nullptr;  // the node that sets the scratch size
    for (const auto& p : loaded->plans)
      if (p.scratch_bytes(device->threads) > loaded->scratch_bytes) {
        loaded->scratch_bytes = p.scratch_bytes(device->threads);
        largest = &p;
      }
    // Where a step's memory goes (docs/PERFORMANCE.md measures peak RSS with it).
    if (device->profile)
      std::fprintf(stderr,
                   "kiln cpu profile: executable with %zu nodes: arena %llu bytes, kernel scratch %llu bytes (%s)\n",
                   loaded->plans.size(), static_cast<unsigned long long>(g.num_slots > 0 ? loaded->slot_bytes[0] : 0),
                   static_cast<unsigned long long>(loaded->scratch_bytes),
                   largest != nullptr ? kiln::cpu::op_name(largest->op) : "none");
    loaded->addresses.assign(g.values.size(), nullptr);
    loaded->device = device;
    return loaded.release();
  }
  static void loaded_free(kiln_device*, kiln_loaded_executable* loaded) { delete loaded; }
  static const kiln_device* loaded_device(const kiln_loaded_executable* exe) { return exe->device; }
  static const std::vector<uint64_t>& slot_bytes(const kiln_loaded_executable* exe) { return exe->slot_bytes; }

  // Binds value addresses from the slot buffers and runs the nodes in order
  // on the device's thread pool, synchronously.
  static void execute(kiln_device* dev, kiln_loaded_executable* exe, kiln_buffer* const* slots) {
    const auto& g = exe->graph;
    std::lock_guard<std::mutex> lock(dev->mutex);
    if (dev->scratch_bytes < exe->scratch_bytes) {
      std::free(dev->scratch);
      dev->scratch = nullptr;
      dev->scratch_bytes = 0;
      dev->scratch = aligned_bytes(exe->scratch_bytes);
      if (dev->scratch == nullptr)
        fail(KILN_ERR_OUT_OF_MEMORY,
             "cannot allocate " + std::to_string(exe->scratch_bytes) + " bytes of kernel scratch");
      dev->scratch_bytes = exe->scratch_bytes;
    }
    for (size_t v = 0; v < g.values.size(); ++v) {
      const auto& val = g.values[v];
      exe->addresses[v] = static_cast<uint8_t*>(slots[val.slot]->data) + val.offset;
    }
    kiln::cpu::Ctx ctx;
    ctx.pool = dev->pool.get();
    ctx.solo = dev->solo_ptrs.data();
    ctx.threads = dev->threads;
    ctx.scratch = dev->scratch;
    void** values = exe->addresses.data();
    std::vector<void*> saved;  // the real addresses of a staged node's values
    for (size_t i = 0; i < exe->plans.size(); ++i) {
      const NodePlan& node = exe->plans[i];
      check_ids(node, i, values);
      auto t0 = std::chrono::steady_clock::now();
      if (node.staging.empty()) {
        dev->run_node(ctx, node, values);
      } else {  // bf16/f16 values around an f32 kernel (staging.h)
        auto* area = static_cast<uint8_t*>(dev->scratch);
        kiln::cpu::stage_in(node.staging, area, values, &saved);
        kiln::cpu::Ctx after_staging = ctx;
        after_staging.scratch = area + node.staging.bytes;
        dev->run_node(after_staging, node, values);
        kiln::cpu::stage_out(node.staging, values, saved);
      }
      if (dev->profile) record_profile(dev, node, kiln::plugin_kit::seconds_since(t0));
    }
  }

  static void synchronize(kiln_device*) {}  // execute is synchronous
  static bool op_supported(int32_t op) { return is_supported(op); }
};

}  // namespace

// Any CPU can run this plugin (AVX2 is chosen at device open, not required).
KILN_PLUGIN_KIT_EXPORT(CpuPlugin)
