// libkiln-backend-cpu.so: the kiln plugin ABI (kiln/plugin.h) over the CPU
// kernels.
//
// compile validates the IR and wraps it in a small versioned container (the
// CPU has nothing to precompute yet; a kernel-plan section can be appended
// later without changing the format). load decodes and plans every node;
// execute binds value addresses from the slot buffers and runs the nodes in
// order on the device's thread pool, synchronously.
//
// Nothing may throw across the C boundary: every entry point runs inside
// guarded(), which turns exceptions into kiln_error objects.
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

#include "fingerprint.h"
#include "kernels.h"
#include "kiln/ir_decode.hpp"
#include "kiln/plugin.h"
#include "plan.h"
#include "thread_pool.h"

// Bump whenever generated code or the executable format changes: it keys the
// compile cache.
#define KILN_CPU_COMPILER_VERSION "cpu-2"  // 2: the tensor-parallel ops

struct kiln_error {
  int32_t code;
  std::string message;
};

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
  // KILN_CPU_PROFILE=1: time spent per op, printed to stderr at close.
  bool profile = false;
  double op_seconds[KILN_OP_COUNT_] = {};
  uint64_t op_calls[KILN_OP_COUNT_] = {};
  struct ShapeTime {
    double seconds = 0.0, flops = 0.0;
    uint64_t calls = 0;
  };
  std::map<std::string, ShapeTime> matmul_shapes;  // by "batch x m x n x k"
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

void print_profile(const kiln_device& d) {
  double total = 0.0;
  for (double s : d.op_seconds) total += s;
  std::fprintf(stderr, "kiln cpu profile (%d threads, %s kernels): %.3f s in kernels\n", d.threads,
               d.avx2 ? "avx2" : "baseline", total);
  for (int op = 0; op < KILN_OP_COUNT_; ++op)
    if (d.op_calls[op] != 0)
      std::fprintf(stderr, "  %-20s %10llu calls %10.3f s %6.1f%%\n", kiln::cpu::op_name(static_cast<kiln_op>(op)),
                   static_cast<unsigned long long>(d.op_calls[op]), d.op_seconds[op],
                   total > 0 ? 100.0 * d.op_seconds[op] / total : 0.0);
  for (const auto& [shape, t] : d.matmul_shapes)
    std::fprintf(stderr, "    matmul %-30s %8llu calls %10.3f s %7.1f GFLOP/s\n", shape.c_str(),
                 static_cast<unsigned long long>(t.calls), t.seconds, t.seconds > 0 ? t.flops / t.seconds / 1e9 : 0.0);
}

constexpr char kExeMagic[8] = {'K', 'I', 'L', 'N', 'C', 'P', 'U', '1'};
constexpr uint32_t kExeFormat = 1;
enum : uint32_t { kSectionIR = 1 };
constexpr uint64_t kAlign = 64;

// ---------------------------------------------------------------- errors

// Handed out when even an error object cannot be allocated; never freed.
kiln_error* static_oom_error() {
  static kiln_error oom{KILN_ERR_OUT_OF_MEMORY, "out of host memory"};
  return &oom;
}

kiln_error* make_error(int32_t code, std::string message) {
  try {
    return new kiln_error{code, std::move(message)};
  } catch (...) {
    return static_oom_error();
  }
}

struct Failure {
  int32_t code;
  std::string message;
};

[[noreturn]] void fail(int32_t code, std::string message) { throw Failure{code, std::move(message)}; }

template <class F>
kiln_error* guarded(F&& f) {
  try {
    f();
    return nullptr;
  } catch (const Failure& e) {
    return make_error(e.code, e.message);
  } catch (const std::bad_alloc&) {
    return make_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
  } catch (const std::exception& e) {
    return make_error(KILN_ERR_INTERNAL, e.what());
  } catch (...) {
    return make_error(KILN_ERR_INTERNAL, "unknown exception in the cpu backend");
  }
}

// Every args struct must at least hold the fields of ABI 1.0.
template <class Args>
// `min_size` is the size of the struct's first version: fields appended
// later are optional and checked with KILN_STRUCT_HAS where they are used.
void check_args(const Args* args, const char* what, size_t min_size = sizeof(Args)) {
  if (args == nullptr) fail(KILN_ERR_INVALID_ARGUMENT, std::string(what) + ": args is NULL");
  if (args->struct_size < min_size)
    fail(KILN_ERR_INVALID_ARGUMENT, std::string(what) + ": args struct_size " + std::to_string(args->struct_size) +
                                        " is smaller than " + std::to_string(min_size));
}

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
  return kiln::backend::fingerprint_hex(host_info().model + "|avx2=" + (use_avx2() ? "1" : "0") + "|" +
                                        KILN_CPU_COMPILER_VERSION);
}

void copy_str(char* dst, size_t cap, const std::string& s) {
  size_t n = std::min(cap - 1, s.size());
  std::memcpy(dst, s.data(), n);
  dst[n] = '\0';
}

void* aligned_bytes(uint64_t bytes) {
  uint64_t rounded = (std::max<uint64_t>(bytes, 1) + kAlign - 1) / kAlign * kAlign;
  if (rounded < bytes) return nullptr;  // overflow
  return std::aligned_alloc(kAlign, rounded);
}

// ---------------------------------------------------------------- executable format
//   char magic[8] "KILNCPU1" | u32 format | u32 len, compiler version |
//   u32 sections | { u32 tag, u64 size, bytes }...

class Writer {
 public:
  template <class T>
  void put(T v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    bytes_.insert(bytes_.end(), p, p + sizeof(T));
  }
  void put_bytes(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    bytes_.insert(bytes_.end(), b, b + n);
  }
  std::vector<uint8_t>& bytes() { return bytes_; }

 private:
  std::vector<uint8_t> bytes_;
};

class Reader {
 public:
  Reader(const uint8_t* p, size_t n) : p_(p), n_(n) {}
  template <class T>
  T get() {
    T v;
    std::memcpy(&v, take(sizeof(T)), sizeof(T));
    return v;
  }
  const uint8_t* take(uint64_t n) {
    if (n > n_ - pos_) fail(KILN_ERR_CORRUPT, "cpu executable is truncated");
    const uint8_t* at = p_ + pos_;
    pos_ += n;
    return at;
  }
  bool done() const { return pos_ == n_; }

 private:
  const uint8_t* p_;
  size_t n_;
  size_t pos_ = 0;
};

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

// ---------------------------------------------------------------- ABI functions

void error_destroy(kiln_error* e) {
  if (e != nullptr && e != static_oom_error()) delete e;
}
const char* error_message(const kiln_error* e) { return e ? e->message.c_str() : ""; }
int32_t error_code(const kiln_error* e) { return e ? e->code : KILN_OK; }
const char* compiler_version() { return KILN_CPU_COMPILER_VERSION; }

void record_profile(kiln_device* dev, const NodePlan& node, double seconds) {
  dev->op_seconds[node.op] += seconds;
  dev->op_calls[node.op] += 1;
  if (node.op != KILN_OP_MATMUL) return;
  auto& t =
      dev->matmul_shapes[std::to_string(node.batch) + "x" + std::to_string(node.m) + "x" + std::to_string(node.n) +
                         "x" + std::to_string(node.k) + (node.trans_a ? " ta" : "") + (node.trans_b ? " tb" : "")];
  t.seconds += seconds;
  t.flops += 2.0 * static_cast<double>(node.batch) * static_cast<double>(node.m) * static_cast<double>(node.n) *
             static_cast<double>(node.k);
  t.calls += 1;
}

}  // namespace

kiln_device::~kiln_device() {
  if (profile) print_profile(*this);
  std::free(scratch);
}

namespace {

kiln_error* device_count(kiln_device_count_args* args) {
  return guarded([&] {
    check_args(args, "device_count", offsetof(kiln_device_count_args, no_devices_reason));
    args->count = 1;
  });
}

kiln_error* device_properties(kiln_device_properties_args* args) {
  return guarded([&] {
    check_args(args, "device_properties");
    check_device_index(args->device_index);
    kiln_device_properties* out = args->properties;
    if (out == nullptr || out->struct_size < sizeof(size_t))
      fail(KILN_ERR_INVALID_ARGUMENT, "device_properties: properties is NULL or has no struct_size");
    const HostInfo& h = host_info();
    kiln_device_properties p{};
    copy_str(p.name, sizeof(p.name), h.model);
    copy_str(p.vendor, sizeof(p.vendor), h.vendor);
    copy_str(p.driver_version, sizeof(p.driver_version), KILN_CPU_COMPILER_VERSION);
    p.kind = KILN_DEVICE_CPU;
    p.memory_bytes = h.memory;
    p.compute_units = h.threads;
    copy_str(p.fingerprint, sizeof(p.fingerprint), device_fingerprint());
    // An older host knows a shorter struct: fill only what it has room for
    // and leave its struct_size as it set it.
    const size_t caller_size = out->struct_size;
    p.struct_size = caller_size;
    std::memcpy(out, &p, std::min(caller_size, sizeof(p)));
  });
}

kiln_error* device_open(kiln_device_open_args* args) {
  return guarded([&] {
    check_args(args, "device_open");
    check_device_index(args->device_index);
    if (args->num_threads < 0)
      fail(KILN_ERR_INVALID_ARGUMENT, "num_threads must be >= 0, got " + std::to_string(args->num_threads));
    auto dev = std::make_unique<kiln_device>();
    const HostInfo& h = host_info();
    dev->threads = args->num_threads > 0 ? args->num_threads : h.threads;
    dev->avx2 = use_avx2();
    const char* profile = std::getenv("KILN_CPU_PROFILE");
    dev->profile = profile != nullptr && *profile != '\0' && std::strcmp(profile, "0") != 0;
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
    args->device = dev.release();
  });
}

void device_close(kiln_device* device) { delete device; }

kiln_error* buffer_alloc(kiln_buffer_alloc_args* args) {
  return guarded([&] {
    check_args(args, "buffer_alloc");
    if (args->device == nullptr) fail(KILN_ERR_INVALID_ARGUMENT, "buffer_alloc: device is NULL");
    void* data = aligned_bytes(args->size_bytes);
    if (data == nullptr)
      fail(KILN_ERR_OUT_OF_MEMORY, "cannot allocate a buffer of " + std::to_string(args->size_bytes) + " bytes");
    args->buffer = new kiln_buffer{data, args->size_bytes};
  });
}

void buffer_free(kiln_device*, kiln_buffer* buffer) {
  if (buffer == nullptr) return;
  std::free(buffer->data);
  delete buffer;
}

void check_range(const char* what, const kiln_buffer* b, uint64_t offset, uint64_t size) {
  if (b == nullptr) fail(KILN_ERR_INVALID_ARGUMENT, std::string(what) + ": buffer is NULL");
  if (offset > b->size || size > b->size - offset)
    fail(KILN_ERR_INVALID_ARGUMENT, std::string(what) + ": " + std::to_string(size) + " bytes at offset " +
                                        std::to_string(offset) + " overrun a buffer of " + std::to_string(b->size) +
                                        " bytes");
}

kiln_error* buffer_write(kiln_buffer_transfer_args* args) {
  return guarded([&] {
    check_args(args, "buffer_write");
    check_range("buffer_write", args->buffer, args->offset, args->size_bytes);
    if (args->size_bytes == 0) return;
    if (args->host == nullptr) fail(KILN_ERR_INVALID_ARGUMENT, "buffer_write: host is NULL");
    std::memcpy(static_cast<uint8_t*>(args->buffer->data) + args->offset, args->host, args->size_bytes);
  });
}

kiln_error* buffer_read(kiln_buffer_transfer_args* args) {
  return guarded([&] {
    check_args(args, "buffer_read");
    check_range("buffer_read", args->buffer, args->offset, args->size_bytes);
    if (args->size_bytes == 0) return;
    if (args->host == nullptr) fail(KILN_ERR_INVALID_ARGUMENT, "buffer_read: host is NULL");
    std::memcpy(args->host, static_cast<const uint8_t*>(args->buffer->data) + args->offset, args->size_bytes);
  });
}

kiln_error* buffer_copy(kiln_buffer_copy_args* args) {
  return guarded([&] {
    check_args(args, "buffer_copy");
    check_range("buffer_copy (source)", args->src, args->src_offset, args->size_bytes);
    check_range("buffer_copy (destination)", args->dst, args->dst_offset, args->size_bytes);
    if (args->size_bytes == 0) return;
    // memmove: source and destination may be ranges of one buffer.
    std::memmove(static_cast<uint8_t*>(args->dst->data) + args->dst_offset,
                 static_cast<const uint8_t*>(args->src->data) + args->src_offset, args->size_bytes);
  });
}

kiln_error* compile(kiln_compile_args* args) {
  return guarded([&] {
    check_args(args, "compile");
    check_device_index(args->device_index);
    if (args->ir == nullptr && args->ir_size != 0) fail(KILN_ERR_INVALID_ARGUMENT, "compile: ir is NULL");
    kiln::ir::DecodedGraph g;
    std::vector<NodePlan> plans;
    decode_and_plan(args->ir, args->ir_size, &g, &plans);

    Writer w;
    w.put_bytes(kExeMagic, sizeof(kExeMagic));
    w.put<uint32_t>(kExeFormat);
    const std::string version = KILN_CPU_COMPILER_VERSION;
    w.put<uint32_t>(static_cast<uint32_t>(version.size()));
    w.put_bytes(version.data(), version.size());
    w.put<uint32_t>(1);  // sections
    w.put<uint32_t>(kSectionIR);
    w.put<uint64_t>(args->ir_size);
    w.put_bytes(args->ir, args->ir_size);

    auto* out = static_cast<uint8_t*>(std::malloc(std::max<size_t>(w.bytes().size(), 1)));
    if (out == nullptr) throw std::bad_alloc();
    std::memcpy(out, w.bytes().data(), w.bytes().size());
    args->executable = out;
    args->executable_size = w.bytes().size();
  });
}

void executable_bytes_free(uint8_t* bytes) { std::free(bytes); }

kiln_error* load(kiln_load_args* args) {
  return guarded([&] {
    check_args(args, "load");
    if (args->device == nullptr) fail(KILN_ERR_INVALID_ARGUMENT, "load: device is NULL");
    if (args->executable == nullptr) fail(KILN_ERR_INVALID_ARGUMENT, "load: executable is NULL");
    Reader r(args->executable, args->executable_size);
    if (args->executable_size < sizeof(kExeMagic) ||
        std::memcmp(r.take(sizeof(kExeMagic)), kExeMagic, sizeof(kExeMagic)) != 0)
      fail(KILN_ERR_CORRUPT, "not a cpu executable (bad magic)");
    const auto format = r.get<uint32_t>();
    if (format != kExeFormat)
      fail(KILN_ERR_CORRUPT, "cpu executable format " + std::to_string(format) + " is not supported (want " +
                                 std::to_string(kExeFormat) + ")");
    const auto vlen = r.get<uint32_t>();
    const std::string version(reinterpret_cast<const char*>(r.take(vlen)), vlen);
    if (version != KILN_CPU_COMPILER_VERSION)
      fail(KILN_ERR_CORRUPT, "executable was compiled by " + version + ", this plugin is " + KILN_CPU_COMPILER_VERSION +
                                 "; recompile it");
    const auto sections = r.get<uint32_t>();
    const uint8_t* ir = nullptr;
    uint64_t ir_size = 0;
    for (uint32_t s = 0; s < sections; ++s) {
      const auto tag = r.get<uint32_t>();
      const auto size = r.get<uint64_t>();
      const uint8_t* data = r.take(size);
      if (tag == kSectionIR) ir = data, ir_size = size;  // unknown sections: later additions
    }
    if (!r.done()) fail(KILN_ERR_CORRUPT, "cpu executable has trailing bytes");
    if (ir == nullptr) fail(KILN_ERR_CORRUPT, "cpu executable has no IR section");

    auto loaded = std::make_unique<kiln_loaded_executable>();
    decode_and_plan(ir, ir_size, &loaded->graph, &loaded->plans);
    const auto& g = loaded->graph;
    loaded->slot_bytes.assign(g.num_slots, 0);
    for (const auto& v : g.values)
      loaded->slot_bytes[v.slot] = std::max(loaded->slot_bytes[v.slot], v.offset + v.bytes());
    for (const auto& p : loaded->plans)
      loaded->scratch_bytes = std::max(loaded->scratch_bytes, p.scratch_bytes(args->device->threads));
    loaded->addresses.assign(g.values.size(), nullptr);
    loaded->device = args->device;
    args->loaded = loaded.release();
  });
}

void loaded_free(kiln_device*, kiln_loaded_executable* loaded) { delete loaded; }

kiln_error* execute(kiln_execute_args* args) {
  return guarded([&] {
    check_args(args, "execute");
    kiln_device* dev = args->device;
    kiln_loaded_executable* exe = args->loaded;
    if (dev == nullptr || exe == nullptr) fail(KILN_ERR_INVALID_ARGUMENT, "execute: device or executable is NULL");
    if (exe->device != dev) fail(KILN_ERR_INVALID_ARGUMENT, "execute: the executable was loaded on another device");
    const auto& g = exe->graph;
    if (args->num_slots < 0 || static_cast<uint32_t>(args->num_slots) < g.num_slots)
      fail(KILN_ERR_INVALID_ARGUMENT, "execute: the graph addresses " + std::to_string(g.num_slots) + " slots, " +
                                          std::to_string(args->num_slots) + " bound");
    if (args->slots == nullptr && g.num_slots > 0) fail(KILN_ERR_INVALID_ARGUMENT, "execute: slots is NULL");
    for (uint32_t s = 0; s < g.num_slots; ++s) {
      if (exe->slot_bytes[s] == 0) continue;
      const kiln_buffer* b = args->slots[s];
      if (b == nullptr) fail(KILN_ERR_INVALID_ARGUMENT, "execute: slot " + std::to_string(s) + " is not bound");
      if (b->size < exe->slot_bytes[s])
        fail(KILN_ERR_INVALID_ARGUMENT, "execute: slot " + std::to_string(s) + " holds " + std::to_string(b->size) +
                                            " bytes; the graph needs " + std::to_string(exe->slot_bytes[s]));
    }

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
      exe->addresses[v] = static_cast<uint8_t*>(args->slots[val.slot]->data) + val.offset;
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
      if (dev->profile)
        record_profile(dev, node, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
  });
}

kiln_error* synchronize(kiln_device*) { return nullptr; }  // execute is synchronous

kiln_error* op_supported(kiln_op_supported_args* args) {
  return guarded([&] {
    check_args(args, "op_supported");
    args->supported = is_supported(args->op) ? 1 : 0;
  });
}

const kiln_plugin_api kApi = {
    sizeof(kiln_plugin_api),
    KILN_ABI_MAJOR,
    KILN_ABI_MINOR,
    "cpu",
    error_destroy,
    error_message,
    error_code,
    compiler_version,
    device_count,
    device_properties,
    device_open,
    device_close,
    buffer_alloc,
    buffer_free,
    buffer_write,
    buffer_read,
    buffer_copy,
    compile,
    executable_bytes_free,
    load,
    loaded_free,
    execute,
    synchronize,
    op_supported,
    nullptr,  // op_supported_node (ABI 1.2): the per-op answer holds for every shape
};

}  // namespace

extern "C" __attribute__((visibility("default"))) const kiln_plugin_api* kiln_plugin_get_api(void) { return &kApi; }

// Any CPU can run this plugin (AVX2 is chosen at device open, not required).
extern "C" __attribute__((visibility("default"))) int kiln_plugin_probe(char* reason, size_t reason_size) {
  if (reason != nullptr && reason_size > 0) reason[0] = '\0';
  return 1;
}
