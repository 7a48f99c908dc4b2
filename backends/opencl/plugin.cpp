// libkiln-backend-opencl.so: the kiln plugin ABI (kiln/plugin.h) over
// OpenCL 1.2 and CLBlast.
//
// compile: decode + check the IR, fuse, generate one OpenCL C program for
// the whole graph, build it in a context of its own on the target device,
// and store source, program binary and schedule in the executable bytes.
// load: recreate the program from the binary (from source if the driver
// refuses it) and its kernels. execute: replay the schedule on the device's
// one in-order queue; nothing returns to the host between kernels. It
// returns once everything is enqueued, except for graphs with index checks
// (embedding, cross entropy), which wait to read the error flag: their
// callers read the loss right after anyway.
//
// Nothing may throw across the C boundary: every entry point runs inside
// guarded(), which turns exceptions into kiln_error objects.

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "codegen.h"
#include "device.h"
#include "executable.h"
#include "gemm_clblast.h"
#include "lower.h"
#include "program.h"
#include "version.h"

using kiln::ocl::fail;

struct kiln_error {
  int32_t code;
  std::string message;
};

struct kiln_device {
  int32_t index = 0;
  const kiln::ocl::DeviceInfo* info = nullptr;
  cl_context context = nullptr;
  cl_command_queue queue = nullptr;
  // Kernel arguments live in the cl_kernel objects, which are not
  // thread-safe, and the GEMM scratch is shared: one execute at a time.
  std::mutex mutex;
  cl_mem gemm_temp = nullptr;
  uint64_t gemm_temp_bytes = 0;
  size_t gemm_min_indirect = 0;  // CLBlast's direct/indirect cut-over
  // KILN_OPENCL_PROFILE=1: each step waited for and timed; a table of time
  // per step label goes to stderr at close.
  bool profile = false;
  struct Time {
    double seconds = 0.0;
    uint64_t calls = 0;
  };
  std::map<std::string, Time> times;
  ~kiln_device() {
    if (profile) print_profile();
    if (queue) clFinish(queue);
    if (gemm_temp) clReleaseMemObject(gemm_temp);
    if (queue) clReleaseCommandQueue(queue);
    if (context) clReleaseContext(context);
  }
  void print_profile() const {
    std::vector<std::pair<std::string, Time>> rows(times.begin(), times.end());
    std::sort(rows.begin(), rows.end(),
              [](const auto& a, const auto& b) { return a.second.seconds > b.second.seconds; });
    double total = 0.0;
    for (const auto& r : rows) total += r.second.seconds;
    std::fprintf(stderr, "kiln opencl profile (%s): %.3f s in steps\n", info->name.c_str(), total);
    for (const auto& [label, t] : rows)
      std::fprintf(stderr, "  %9.3f s %5.1f%% %7llu calls  %s\n", t.seconds,
                   total > 0 ? 100.0 * t.seconds / total : 0.0, static_cast<unsigned long long>(t.calls),
                   label.c_str());
  }
};

struct kiln_buffer {
  cl_mem mem = nullptr;
  uint64_t size = 0;
};

struct kiln_loaded_executable {
  kiln_device* device = nullptr;
  kiln::ocl::Schedule schedule;
  cl_program program = nullptr;
  std::vector<cl_kernel> kernels;
  cl_mem arena = nullptr;  // own arena when the plan does not fit slot 0
  cl_mem flag = nullptr;
  uint64_t gemm_temp_bytes = 0;
  bool rebuilt = false;  // the program came from source, not the binary
  ~kiln_loaded_executable() {
    for (cl_kernel k : kernels) clReleaseKernel(k);
    if (program) clReleaseProgram(program);
    if (arena) clReleaseMemObject(arena);
    if (flag) clReleaseMemObject(flag);
  }
};

namespace {

using kiln::ocl::Failure;

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
    return make_error(KILN_ERR_INTERNAL, "unknown exception in the opencl backend");
  }
}

// `min_size` is the size of the struct's first version: fields appended
// later are optional and checked with KILN_STRUCT_HAS where they are used.
template <class Args>
void check_args(const Args* args, const char* what, size_t min_size = sizeof(Args)) {
  if (args == nullptr) fail(KILN_ERR_INVALID_ARGUMENT, std::string(what) + ": args is NULL");
  if (args->struct_size < min_size)
    fail(KILN_ERR_INVALID_ARGUMENT, std::string(what) + ": args struct_size " + std::to_string(args->struct_size) +
                                        " is smaller than " + std::to_string(min_size));
}

void copy_str(char* dst, size_t cap, const std::string& s) {
  size_t n = std::min(cap - 1, s.size());
  std::memcpy(dst, s.data(), n);
  dst[n] = '\0';
}

cl_mem create_buffer(cl_context ctx, uint64_t bytes, const std::string& what) {
  cl_int status = CL_SUCCESS;
  // Zero-sized OpenCL buffers are invalid; the host may ask for one.
  cl_mem m = clCreateBuffer(ctx, CL_MEM_READ_WRITE, std::max<uint64_t>(bytes, 64), nullptr, &status);
  if (status == CL_INVALID_BUFFER_SIZE)
    fail(KILN_ERR_OUT_OF_MEMORY, what + ": " + std::to_string(bytes) + " bytes exceed the device's limit");
  kiln::ocl::cl_check(status, what);
  return m;
}

// ---------------------------------------------------------------- ABI functions

void error_destroy(kiln_error* e) {
  if (e != nullptr && e != static_oom_error()) delete e;
}
const char* error_message(const kiln_error* e) { return e ? e->message.c_str() : ""; }
int32_t error_code(const kiln_error* e) { return e ? e->code : KILN_OK; }
const char* compiler_version() { return kiln::ocl::kCompilerVersion; }

kiln_error* device_count(kiln_device_count_args* args) {
  return guarded([&] {
    check_args(args, "device_count", offsetof(kiln_device_count_args, no_devices_reason));
    args->count = static_cast<int32_t>(kiln::ocl::devices().size());
    if (args->count == 0 && KILN_STRUCT_HAS(kiln_device_count_args, args, no_devices_reason))
      copy_str(args->no_devices_reason, sizeof(args->no_devices_reason), kiln::ocl::no_devices_reason());
  });
}

kiln_error* device_properties(kiln_device_properties_args* args) {
  return guarded([&] {
    check_args(args, "device_properties");
    const kiln::ocl::DeviceInfo& d = kiln::ocl::device_at(args->device_index);
    kiln_device_properties* out = args->properties;
    if (out == nullptr || out->struct_size < sizeof(size_t))
      fail(KILN_ERR_INVALID_ARGUMENT, "device_properties: properties is NULL or has no struct_size");
    kiln_device_properties p{};
    copy_str(p.name, sizeof(p.name), d.name);
    copy_str(p.vendor, sizeof(p.vendor), d.vendor);
    copy_str(p.driver_version, sizeof(p.driver_version), d.platform_name + " " + d.driver_version);
    p.kind = d.kind;
    p.memory_bytes = d.memory_bytes;
    p.compute_units = d.compute_units;
    copy_str(p.fingerprint, sizeof(p.fingerprint), d.fingerprint);
    // An older host knows a shorter struct: fill only what it has room for.
    const size_t caller_size = out->struct_size;
    p.struct_size = caller_size;
    std::memcpy(out, &p, std::min(caller_size, sizeof(p)));
  });
}

kiln_error* device_open(kiln_device_open_args* args) {
  return guarded([&] {
    check_args(args, "device_open");
    const kiln::ocl::DeviceInfo& d = kiln::ocl::device_at(args->device_index);
    auto dev = std::make_unique<kiln_device>();
    dev->index = args->device_index;
    dev->info = &d;
    cl_int status = CL_SUCCESS;
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, reinterpret_cast<cl_context_properties>(d.platform), 0};
    dev->context = clCreateContext(props, 1, &d.id, nullptr, nullptr, &status);
    kiln::ocl::cl_check(status, "clCreateContext on " + d.name);
    // In order: the schedule relies on each command seeing the previous
    // one's results, with no events in between.
    dev->queue = clCreateCommandQueue(dev->context, d.id, 0, &status);
    kiln::ocl::cl_check(status, "clCreateCommandQueue on " + d.name);
    kiln::ocl::apply_gemm_tuning(d);
    dev->gemm_min_indirect = kiln::ocl::gemm_min_indirect(d.id);
    const char* profile = std::getenv("KILN_OPENCL_PROFILE");
    dev->profile = profile != nullptr && *profile != '\0' && std::strcmp(profile, "0") != 0;
    args->device = dev.release();
  });
}

void device_close(kiln_device* device) { delete device; }

kiln_error* buffer_alloc(kiln_buffer_alloc_args* args) {
  return guarded([&] {
    check_args(args, "buffer_alloc");
    if (args->device == nullptr) fail(KILN_ERR_INVALID_ARGUMENT, "buffer_alloc: device is NULL");
    auto b = std::make_unique<kiln_buffer>();
    b->mem = create_buffer(args->device->context, args->size_bytes,
                           "allocating " + std::to_string(args->size_bytes) + " bytes");
    b->size = args->size_bytes;
    args->buffer = b.release();
  });
}

void buffer_free(kiln_device*, kiln_buffer* buffer) {
  if (buffer == nullptr) return;
  // Safe with commands still queued: OpenCL keeps the memory until they end.
  clReleaseMemObject(buffer->mem);
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
    if (args->device == nullptr) fail(KILN_ERR_INVALID_ARGUMENT, "buffer_write: device is NULL");
    check_range("buffer_write", args->buffer, args->offset, args->size_bytes);
    if (args->size_bytes == 0) return;
    if (args->host == nullptr) fail(KILN_ERR_INVALID_ARGUMENT, "buffer_write: host is NULL");
    // Blocking: the caller may reuse its memory as soon as we return.
    kiln::ocl::cl_check(clEnqueueWriteBuffer(args->device->queue, args->buffer->mem, CL_TRUE, args->offset,
                                             args->size_bytes, args->host, 0, nullptr, nullptr),
                        "buffer_write");
  });
}

kiln_error* buffer_read(kiln_buffer_transfer_args* args) {
  return guarded([&] {
    check_args(args, "buffer_read");
    if (args->device == nullptr) fail(KILN_ERR_INVALID_ARGUMENT, "buffer_read: device is NULL");
    check_range("buffer_read", args->buffer, args->offset, args->size_bytes);
    if (args->size_bytes == 0) return;
    if (args->host == nullptr) fail(KILN_ERR_INVALID_ARGUMENT, "buffer_read: host is NULL");
    kiln::ocl::cl_check(clEnqueueReadBuffer(args->device->queue, args->buffer->mem, CL_TRUE, args->offset,
                                            args->size_bytes, args->host, 0, nullptr, nullptr),
                        "buffer_read");
  });
}

kiln_error* buffer_copy(kiln_buffer_copy_args* args) {
  return guarded([&] {
    check_args(args, "buffer_copy");
    if (args->device == nullptr) fail(KILN_ERR_INVALID_ARGUMENT, "buffer_copy: device is NULL");
    check_range("buffer_copy (source)", args->src, args->src_offset, args->size_bytes);
    check_range("buffer_copy (destination)", args->dst, args->dst_offset, args->size_bytes);
    if (args->size_bytes == 0) return;
    kiln_device* dev = args->device;
    const bool overlap = args->src == args->dst && args->src_offset < args->dst_offset + args->size_bytes &&
                         args->dst_offset < args->src_offset + args->size_bytes;
    if (!overlap) {
      kiln::ocl::cl_check(clEnqueueCopyBuffer(dev->queue, args->src->mem, args->dst->mem, args->src_offset,
                                              args->dst_offset, args->size_bytes, 0, nullptr, nullptr),
                          "buffer_copy");
      return;
    }
    // OpenCL refuses overlapping copies (memmove semantics): go through a
    // temporary buffer.
    cl_mem tmp = create_buffer(dev->context, args->size_bytes, "buffer_copy scratch");
    cl_int s1 = clEnqueueCopyBuffer(dev->queue, args->src->mem, tmp, args->src_offset, 0, args->size_bytes, 0, nullptr,
                                    nullptr);
    cl_int s2 = s1 == CL_SUCCESS ? clEnqueueCopyBuffer(dev->queue, tmp, args->dst->mem, 0, args->dst_offset,
                                                       args->size_bytes, 0, nullptr, nullptr)
                                 : s1;
    clReleaseMemObject(tmp);
    kiln::ocl::cl_check(s2, "buffer_copy");
  });
}

// The one list op_supported and compile read: the union of the lists the
// code generators keep beside their emitters (emit.h). The tensor-parallel
// ops have no kernels here: the host runs them on the cpu fallback.
const kiln::backend::SupportList& supported() {
  static const kiln::backend::SupportList list{kiln::ocl::supported_ops().data(), kiln::ocl::supported_ops().size(),
                                               "opencl"};
  return list;
}

kiln_error* compile(kiln_compile_args* args) {
  return guarded([&] {
    check_args(args, "compile");
    const kiln::ocl::DeviceInfo& d = kiln::ocl::device_at(args->device_index);
    kiln::ir::DecodedGraph g;
    kiln::ocl::decode_ir(args->ir, args->ir_size, &g);
    kiln::backend::require_supported(g, supported());
    kiln::backend::require_32bit_storage(g, supported().backend);
    const std::vector<kiln::ocl::NodeInfo> info = kiln::ocl::analyze(g);
    kiln::ocl::Program prog = kiln::ocl::generate(g, info, kiln::ocl::target_for(d));

    kiln::ocl::ExecutableImage image;
    image.compiler_version = kiln::ocl::kCompilerVersion;
    image.fingerprint = d.fingerprint;
    image.device_name = d.name;
    if (!prog.source.empty()) {
      kiln::ocl::ScopedContext ctx(args->device_index);
      cl_program program = kiln::ocl::build_from_source(ctx.get(), d.id, prog.source);
      try {
        image.binary = kiln::ocl::program_binary(program);
      } catch (...) {
        clReleaseProgram(program);
        throw;
      }
      clReleaseProgram(program);
    }
    image.source = std::move(prog.source);
    image.schedule = std::move(prog.schedule);
    const std::vector<uint8_t> bytes = kiln::ocl::encode_executable(image);
    auto* out = static_cast<uint8_t*>(std::malloc(std::max<size_t>(bytes.size(), 1)));
    if (out == nullptr) throw std::bad_alloc();
    std::memcpy(out, bytes.data(), bytes.size());
    args->executable = out;
    args->executable_size = bytes.size();
  });
}

void executable_bytes_free(uint8_t* bytes) { std::free(bytes); }

kiln_error* load(kiln_load_args* args) {
  return guarded([&] {
    check_args(args, "load");
    kiln_device* dev = args->device;
    if (dev == nullptr) fail(KILN_ERR_INVALID_ARGUMENT, "load: device is NULL");
    if (args->executable == nullptr) fail(KILN_ERR_INVALID_ARGUMENT, "load: executable is NULL");
    kiln::ocl::ExecutableImage image = kiln::ocl::decode_executable(args->executable, args->executable_size);
    auto exe = std::make_unique<kiln_loaded_executable>();
    exe->device = dev;
    exe->schedule = std::move(image.schedule);
    const kiln::ocl::Schedule& s = exe->schedule;
    if (!s.kernel_names.empty()) {
      if (image.source.empty()) fail(KILN_ERR_CORRUPT, "opencl executable has kernels but no source");
      exe->program = kiln::ocl::load_program(dev->context, dev->info->id, image.binary, image.source, &exe->rebuilt);
      for (const std::string& name : s.kernel_names) {
        cl_int status = CL_SUCCESS;
        cl_kernel k = clCreateKernel(exe->program, name.c_str(), &status);
        if (status == CL_INVALID_KERNEL_NAME)
          fail(KILN_ERR_CORRUPT, "opencl executable names kernel " + name + " its program lacks");
        kiln::ocl::cl_check(status, "clCreateKernel " + name);
        exe->kernels.push_back(k);
      }
    }
    if (!s.arena_in_slot0 && s.arena_bytes > 0)
      exe->arena = create_buffer(dev->context, s.arena_bytes, "allocating the executable's arena");
    if (!s.checks.empty()) exe->flag = create_buffer(dev->context, sizeof(cl_int), "allocating the error flag");
    for (const kiln::ocl::Step& st : s.steps)
      if (st.kind == kiln::ocl::StepKind::Gemm)
        exe->gemm_temp_bytes = std::max(exe->gemm_temp_bytes, kiln::ocl::gemm_temp_bytes(dev->queue, st));
    args->loaded = exe.release();
  });
}

void loaded_free(kiln_device*, kiln_loaded_executable* loaded) { delete loaded; }

struct Resolved {
  cl_mem mem;
  cl_ulong offset;
};

kiln_error* execute(kiln_execute_args* args) {
  return guarded([&] {
    check_args(args, "execute");
    kiln_device* dev = args->device;
    kiln_loaded_executable* exe = args->loaded;
    if (dev == nullptr || exe == nullptr) fail(KILN_ERR_INVALID_ARGUMENT, "execute: device or executable is NULL");
    if (exe->device != dev) fail(KILN_ERR_INVALID_ARGUMENT, "execute: the executable was loaded on another device");
    const kiln::ocl::Schedule& s = exe->schedule;
    if (args->num_slots < 0 || static_cast<uint32_t>(args->num_slots) < s.num_slots)
      fail(KILN_ERR_INVALID_ARGUMENT, "execute: the graph addresses " + std::to_string(s.num_slots) + " slots, " +
                                          std::to_string(args->num_slots) + " bound");
    if (args->slots == nullptr && s.num_slots > 0) fail(KILN_ERR_INVALID_ARGUMENT, "execute: slots is NULL");
    for (uint32_t i = 0; i < s.num_slots; ++i) {
      if (s.slot_bytes[i] == 0) continue;
      const kiln_buffer* b = args->slots[i];
      if (b == nullptr) fail(KILN_ERR_INVALID_ARGUMENT, "execute: slot " + std::to_string(i) + " is not bound");
      if (b->size < s.slot_bytes[i])
        fail(KILN_ERR_INVALID_ARGUMENT, "execute: slot " + std::to_string(i) + " holds " + std::to_string(b->size) +
                                            " bytes; the graph needs " + std::to_string(s.slot_bytes[i]));
    }
    auto resolve = [&](const kiln::ocl::Ref& r) -> Resolved {
      switch (r.mem) {
        case kiln::ocl::Mem::Slot: return {args->slots[r.slot]->mem, r.offset};
        case kiln::ocl::Mem::Arena: return {s.arena_in_slot0 ? args->slots[0]->mem : exe->arena, r.offset};
        case kiln::ocl::Mem::Flag: return {exe->flag, r.offset};
      }
      return {nullptr, 0};
    };

    std::lock_guard<std::mutex> lock(dev->mutex);
    cl_command_queue q = dev->queue;
    if (exe->gemm_temp_bytes > dev->gemm_temp_bytes) {
      if (dev->gemm_temp) clReleaseMemObject(dev->gemm_temp);
      dev->gemm_temp = nullptr;
      dev->gemm_temp_bytes = 0;
      dev->gemm_temp = create_buffer(dev->context, exe->gemm_temp_bytes, "allocating GEMM scratch");
      dev->gemm_temp_bytes = exe->gemm_temp_bytes;
    }
    if (exe->flag != nullptr) {
      const cl_int none = INT_MAX;
      kiln::ocl::cl_check(clEnqueueFillBuffer(q, exe->flag, &none, sizeof(none), 0, sizeof(none), 0, nullptr, nullptr),
                          "resetting the error flag");
    }
    if (dev->profile) clFinish(q);
    for (const kiln::ocl::Step& st : s.steps) {
      const auto t0 = std::chrono::steady_clock::now();
      switch (st.kind) {
        case kiln::ocl::StepKind::Kernel: {
          cl_kernel k = exe->kernels[st.kernel];
          for (size_t i = 0; i < st.args.size(); ++i) {
            const Resolved r = resolve(st.args[i]);
            cl_int e1 = clSetKernelArg(k, static_cast<cl_uint>(2 * i), sizeof(cl_mem), &r.mem);
            cl_int e2 = clSetKernelArg(k, static_cast<cl_uint>(2 * i + 1), sizeof(cl_ulong), &r.offset);
            kiln::ocl::cl_check(e1 != CL_SUCCESS ? e1 : e2, "setting the arguments of " + s.kernel_names[st.kernel]);
          }
          size_t global[3], local[3];
          for (int i = 0; i < 3; ++i) global[i] = st.global[i], local[i] = st.local[i];
          kiln::ocl::cl_check(clEnqueueNDRangeKernel(q, k, st.dims, nullptr, global, st.local[0] ? local : nullptr, 0,
                                                     nullptr, nullptr),
                              "node " + std::to_string(st.node) + ": launching " + s.kernel_names[st.kernel]);
          break;
        }
        case kiln::ocl::StepKind::Gemm: {
          const Resolved a = resolve(st.args[0]), b = resolve(st.args[1]), c = resolve(st.args[2]);
          kiln::ocl::run_gemm(q, st, {a.mem, b.mem, c.mem, a.offset, b.offset, c.offset}, dev->gemm_temp,
                              dev->gemm_min_indirect);
          break;
        }
        case kiln::ocl::StepKind::Copy: {
          const Resolved src = resolve(st.args[0]), dst = resolve(st.args[1]);
          kiln::ocl::cl_check(
              clEnqueueCopyBuffer(q, src.mem, dst.mem, src.offset * 4, dst.offset * 4, st.bytes, 0, nullptr, nullptr),
              "node " + std::to_string(st.node) + ": copy");
          break;
        }
      }
      if (dev->profile) {
        clFinish(q);
        auto& t = dev->times[st.label];
        t.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        t.calls += 1;
      }
    }
    if (exe->flag == nullptr) {
      kiln::ocl::cl_check(clFlush(q), "clFlush");
      return;
    }
    cl_int failed = INT_MAX;
    kiln::ocl::cl_check(clEnqueueReadBuffer(q, exe->flag, CL_TRUE, 0, sizeof(failed), &failed, 0, nullptr, nullptr),
                        "reading the error flag");
    if (failed != INT_MAX) {
      const size_t i = static_cast<size_t>(failed);
      fail(KILN_ERR_INVALID_ARGUMENT, i < s.checks.size() ? s.checks[i] : "a kernel reported a bad index");
    }
  });
}

kiln_error* synchronize(kiln_device* device) {
  return guarded([&] {
    if (device == nullptr) fail(KILN_ERR_INVALID_ARGUMENT, "synchronize: device is NULL");
    kiln::ocl::cl_check(clFinish(device->queue), "clFinish");
  });
}

kiln_error* op_supported(kiln_op_supported_args* args) {
  return guarded([&] {
    check_args(args, "op_supported");
    args->supported = supported().contains(args->op) ? 1 : 0;
  });
}

const kiln_plugin_api kApi = {
    sizeof(kiln_plugin_api),
    KILN_ABI_MAJOR,
    KILN_ABI_MINOR,
    "opencl",
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

// Cheap by contract: no platform query (drivers can take seconds to
// initialise). The plugin links the ICD loader, so reaching this function
// means libOpenCL loaded; whether any platform exists is device_count's
// question, answered with 0 devices rather than a refusal.
extern "C" __attribute__((visibility("default"))) int kiln_plugin_probe(char* reason, size_t reason_size) {
  if (reason != nullptr && reason_size > 0) reason[0] = '\0';
  return 1;
}
