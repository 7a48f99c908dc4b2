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

#include "gemm_choice.h"
#include "isa.h"
#include "kernels.h"
#include "kiln/ir_decode.hpp"
#include "kiln/plugin.h"
#include "kiln/plugin_kit.hpp"
#include "lowp_features.h"
#include "plan.h"
#include "thread_pool.h"

// Bump whenever generated code or the executable format changes: it keys the
// compile cache.
// 2: the tensor-parallel ops; 3: the kit's container; 4: the ISA path and the
// per-shape GEMM choice (the kernels section).
#define KILN_CPU_COMPILER_VERSION "cpu-4"

struct kiln_device {
  int threads = 1;
  kiln::cpu::CpuIsa isa = kiln::cpu::CpuIsa::kBaseline;
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
  bool owned = true;  // false: a view of host memory another device owns (buffer_wrap_host)
};

struct kiln_loaded_executable {
  kiln::ir::DecodedGraph graph;
  std::vector<kiln::cpu::NodePlan> plans;
  std::vector<uint64_t> slot_bytes;  // bytes each slot must hold
  uint64_t scratch_bytes = 0;
  std::vector<void*> addresses;         // per value, rebound at every execute
  const kiln_device* device = nullptr;  // the device it was loaded on
  // The oneDNN GEMMs its MATMUL nodes run (NodePlan::library points here).
  std::vector<std::shared_ptr<const kiln::cpu::LibraryGemm>> library_gemms;
};

namespace {

using kiln::cpu::CpuIsa;
using kiln::cpu::NodePlan;

using kiln::plugin_kit::fail;

constexpr kiln::plugin_kit::ContainerFormat kFormat{
    {'K', 'I', 'L', 'N', 'C', 'P', 'U', '1'}, 2, "cpu", KILN_CPU_COMPILER_VERSION};
// The kernels section: u32 ISA path the executable needs, u64 node count,
// then one u8 GemmKernel per node (kKiln for every node but MATMULs).
enum : uint32_t { kSectionIR = 1, kSectionKernels = 2 };
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

struct HostInfo {
  std::string model = "cpu";
  std::string vendor = "unknown";
  int threads = 1;
  uint64_t memory = 0;
};

const HostInfo& host_info() {
  static const HostInfo info = [] {
    HostInfo h;
    std::ifstream f("/proc/cpuinfo");  // not an input: a /proc file (st_size 0, always regular)
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
    h.threads = hardware_threads();
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    if (pages > 0 && page > 0) h.memory = static_cast<uint64_t>(pages) * static_cast<uint64_t>(page);
    return h;
  }();
  return info;
}

// What a device opened now runs (kiln_device's isa and the GEMM policy): read
// from the environment at every call, not cached, so tests can use several
// paths in one process. A bad KILN_CPU_ISA or KILN_CPU_GEMM fails the open
// and compile; here, for properties, the detected path stands in.
struct Paths {
  CpuIsa isa;
  kiln::cpu::GemmPolicy gemm;
};

Paths current_paths() {
  const kiln::cpu::IsaChoice isa = kiln::cpu::chosen_isa();
  const kiln::cpu::GemmPolicyChoice gemm = kiln::cpu::gemm_policy();
  return {isa.error.empty() ? isa.isa : kiln::cpu::detected_isa(), gemm.policy};
}

Paths checked_paths() {
  const kiln::cpu::IsaChoice isa = kiln::cpu::chosen_isa();
  if (!isa.error.empty()) fail(KILN_ERR_INVALID_ARGUMENT, isa.error);
  const kiln::cpu::GemmPolicyChoice gemm = kiln::cpu::gemm_policy();
  if (!gemm.error.empty()) fail(KILN_ERR_INVALID_ARGUMENT, gemm.error);
  return {isa.isa, gemm.policy};
}

// The path and GEMM policy are part of the fingerprint, so of every cache
// key: an executable is only ever looked up for the path it was compiled for.
std::string device_fingerprint(const Paths& p) {
  return kiln::plugin_kit::fingerprint_hex(host_info().model + "|isa=" + kiln::cpu::isa_name(p.isa) + "|gemm=" +
                                           kiln::cpu::gemm_policy_name(p.gemm) + "|" + KILN_CPU_COMPILER_VERSION);
}

// `kiln devices` shows it in the driver field: "cpu-4 avx512+bf16 gemm=measure".
std::string driver_text(const Paths& p) {
  std::string t = std::string(KILN_CPU_COMPILER_VERSION) + " " + kiln::cpu::isa_name(p.isa);
  if (static_cast<int>(p.isa) >= static_cast<int>(CpuIsa::kAvx512) && kiln::cpu::has_avx512_bf16()) t += "+bf16";
  return t + " gemm=" + kiln::cpu::gemm_policy_name(p.gemm);
}

// kiln's own kernel set for a path: AMX has no memory-bound instructions
// of its own, so amx devices run the AVX-512 kernels (and oneDNN's tile GEMM).
kiln::cpu::RunNodeFn kernels_for(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::kBaseline: return &kiln::cpu::base::run_node;
    case CpuIsa::kAvx2: return &kiln::cpu::avx2::run_node;
    case CpuIsa::kAvx512:
    case CpuIsa::kAmx: return &kiln::cpu::avx512::run_node;
  }
  return &kiln::cpu::base::run_node;
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

kiln::cpu::GemmShape gemm_shape(const NodePlan& p) { return {p.x_dtype, p.trans_a, p.trans_b, p.m, p.n, p.k}; }

// Compile: the kernels section (its layout is at kSectionKernels). The path
// recorded is the one the executable needs: the compile's path if some node
// runs a library GEMM (whose instructions depend on it), else the baseline,
// since kiln's own kernels are picked by the device that runs them.
std::vector<uint8_t> kernels_section(const Paths& paths, const std::vector<NodePlan>& plans) {
  std::vector<uint8_t> kernels;
  kernels.reserve(plans.size());
  CpuIsa needs = CpuIsa::kBaseline;
  for (const NodePlan& p : plans) {
    kiln::cpu::GemmKernel kernel = kiln::cpu::GemmKernel::kKiln;
    if (p.op == KILN_OP_MATMUL) kernel = kiln::cpu::choose_gemm(gemm_shape(p), p.batch, paths.isa, paths.gemm).kernel;
    if (kernel == kiln::cpu::GemmKernel::kLibrary) needs = paths.isa;
    kernels.push_back(static_cast<uint8_t>(kernel));
  }
  kiln::plugin_kit::Writer w;
  w.put<uint32_t>(static_cast<uint32_t>(needs));
  w.put<uint64_t>(kernels.size());
  w.put_bytes(kernels.data(), kernels.size());
  return std::move(w.bytes());
}

// Load: checks the executable's path against the device's and prepares the
// library GEMMs its kernels section names.
void bind_kernels(const kiln_device& device, const kiln::plugin_kit::Section& section, kiln_loaded_executable* exe) {
  kiln::plugin_kit::Reader r(section.data, section.size, "cpu executable's kernels section");
  const auto isa = r.get<uint32_t>();
  if (isa > static_cast<uint32_t>(CpuIsa::kAmx)) fail(KILN_ERR_CORRUPT, "cpu executable names an unknown ISA path");
  // Never run instructions the device lacks: an executable that needs a
  // higher path is refused here, before any of its kernels runs.
  if (isa > static_cast<uint32_t>(device.isa))
    fail(KILN_ERR_UNSUPPORTED, std::string("cpu executable needs the ") +
                                   kiln::cpu::isa_name(static_cast<CpuIsa>(isa)) + " path and this device runs " +
                                   kiln::cpu::isa_name(device.isa) + " (this CPU, or KILN_CPU_ISA); recompile it here");
  if (r.get_count(1) != exe->plans.size())
    fail(KILN_ERR_CORRUPT, "cpu executable's kernels section does not match its graph");
  for (NodePlan& p : exe->plans) {
    const auto kernel = r.get<uint8_t>();
    if (kernel > static_cast<uint8_t>(kiln::cpu::GemmKernel::kLibrary) ||
        (kernel != 0 && (p.op != KILN_OP_MATMUL || p.batch != 1)))
      fail(KILN_ERR_CORRUPT, "cpu executable's kernels section names a kernel its node cannot run");
    if (kernel == 0) continue;
    std::string why;
    std::shared_ptr<const kiln::cpu::LibraryGemm> lib = kiln::cpu::LibraryGemm::create(gemm_shape(p), device.isa, &why);
    // Chosen at compile but unavailable now (oneDNN in this process is held
    // to a lower path by an earlier device): kiln's kernel computes the same
    // product.
    if (!lib) {
      if (device.profile) std::fprintf(stderr, "kiln cpu profile: library GEMM unavailable (%s)\n", why.c_str());
      continue;
    }
    p.library = lib.get();
    exe->library_gemms.push_back(std::move(lib));
  }
  if (!r.done()) fail(KILN_ERR_CORRUPT, "cpu executable's kernels section has trailing bytes");
}

}  // namespace

kiln_device::~kiln_device() {
  if (profile) {
    const std::string title = "kiln cpu profile (" + std::to_string(threads) + " threads, ";
    times.print(stderr, title + kiln::cpu::isa_name(isa) + " path)", "calls");
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
    const Paths paths = current_paths();
    return {h.model,  h.vendor,  driver_text(paths),        KILN_DEVICE_CPU,
            h.memory, h.threads, device_fingerprint(paths), kiln::cpu::low_precision_features()};
  }

  static kiln_device* device_open(int32_t index, int32_t num_threads) {
    check_device_index(index);
    if (num_threads < 0)
      fail(KILN_ERR_INVALID_ARGUMENT, "num_threads must be >= 0, got " + std::to_string(num_threads));
    const Paths paths = checked_paths();
    auto dev = std::make_unique<kiln_device>();
    dev->threads = num_threads > 0 ? num_threads : host_info().threads;
    dev->isa = paths.isa;
    dev->profile = kiln::plugin_kit::env_flag("KILN_CPU_PROFILE");
    dev->run_node = kernels_for(dev->isa);
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
    if (buffer->owned) std::free(buffer->data);
    delete buffer;
  }
  // Buffers are host memory: the host may share them with a host-memory
  // device, and hand us that device's buffers (ABI 1.5).
  static void* buffer_host_address(kiln_buffer* b) { return b->data; }
  static kiln_buffer* buffer_wrap_host(kiln_device*, void* address, uint64_t size) {
    return new kiln_buffer{address, size, false};
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

  // The executable is the checked IR and the kernels section: which GEMM each
  // MATMUL runs, measured here on this machine (gemm_choice.h).
  static std::vector<uint8_t> compile(const kiln_compile_args& args) {
    check_device_index(args.device_index);
    const Paths paths = checked_paths();
    kiln::ir::DecodedGraph g;
    std::vector<NodePlan> plans;
    decode_and_plan(args.ir, args.ir_size, &g, &plans);
    const std::vector<uint8_t> kernels = kernels_section(paths, plans);
    kiln::plugin_kit::Container c{
        {KILN_CPU_COMPILER_VERSION, device_fingerprint(paths), host_info().model},
        {{kSectionIR, args.ir, args.ir_size}, {kSectionKernels, kernels.data(), kernels.size()}}};
    return kiln::plugin_kit::write_container(kFormat, c);
  }

  static kiln_loaded_executable* load(kiln_device* device, const uint8_t* bytes, size_t size) {
    const kiln::plugin_kit::Container c = kiln::plugin_kit::read_container(kFormat, bytes, size);
    const kiln::plugin_kit::Section* ir = c.find(kSectionIR);
    if (ir == nullptr) fail(KILN_ERR_CORRUPT, "cpu executable has no IR section");
    const kiln::plugin_kit::Section* kernels = c.find(kSectionKernels);
    if (kernels == nullptr) fail(KILN_ERR_CORRUPT, "cpu executable has no kernels section");
    auto loaded = std::make_unique<kiln_loaded_executable>();
    decode_and_plan(ir->data, ir->size, &loaded->graph, &loaded->plans);
    bind_kernels(*device, *kernels, loaded.get());
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
