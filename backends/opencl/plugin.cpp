// libkiln-backend-opencl.so: the kiln plugin ABI (kiln/plugin.h) over
// OpenCL 1.2 and CLBlast.
//
// compile: decode + check the IR, fuse, generate one OpenCL C program for
// the whole graph, build it in a context of its own on the target device,
// run each kernel launch once there (work_group_builds.h: PoCL's work-group
// builds then travel in the binary), and store source, program binary and
// schedule in the executable bytes.
// load: recreate the program from the binary (from source if the driver
// refuses it) and its kernels (on PoCL, running each launch once on
// scratch, which loads the work-group functions). execute: replay the
// schedule on the device's one in-order queue; nothing returns to the host
// between kernels. It returns once everything is enqueued, except for
// graphs with index checks (embedding, cross entropy), which wait to read
// the error flag: their callers read the loss right after anyway.
//
// The C boundary (argument checks, errors, the function table, the
// executable container) is the plugin kit's (kiln/plugin_kit.hpp): this file
// is the device part, the OpenclPlugin class at the end.

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "attention_node.h"
#include "attention_plan.h"
#include "codegen.h"
#include "device.h"
#include "executable.h"
#include "gemm_clblast.h"
#include "lower.h"
#include "pocl_serial.h"
#include "program.h"
#include "version.h"
#include "work_group_builds.h"

using kiln::ocl::fail;

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
  // KILN_OPENCL_PROFILE=1: each step waited for and timed; a table of time
  // per step label goes to stderr at close.
  bool profile = false;
  kiln::plugin_kit::ProfileTable times;
  ~kiln_device() {
    if (profile) times.print(stderr, "kiln opencl profile (" + info->name + ")", "calls");
    if (queue) clFinish(queue);
    if (gemm_temp) clReleaseMemObject(gemm_temp);
    if (queue) clReleaseCommandQueue(queue);
    if (context) clReleaseContext(context);
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

cl_mem create_buffer(cl_context ctx, uint64_t bytes, const std::string& what) {
  cl_int status = CL_SUCCESS;
  // Zero-sized OpenCL buffers are invalid; the host may ask for one.
  cl_mem m = clCreateBuffer(ctx, CL_MEM_READ_WRITE, std::max<uint64_t>(bytes, 64), nullptr, &status);
  if (status == CL_INVALID_BUFFER_SIZE)
    fail(KILN_ERR_OUT_OF_MEMORY, what + ": " + std::to_string(bytes) + " bytes exceed the device's limit");
  kiln::ocl::cl_check(status, what);
  return m;
}

// The one list op_supported and compile read: the union of the lists the
// code generators keep beside their emitters (emit.h). The tensor-parallel
// ops have no kernels here: the host runs them on the cpu fallback.
const kiln::backend::SupportList& supported() {
  static const kiln::backend::SupportList list{kiln::ocl::supported_ops().data(), kiln::ocl::supported_ops().size(),
                                               "opencl"};
  return list;
}

struct Resolved {
  cl_mem mem;
  cl_ulong offset;
};

// The device part; the kit (kiln/plugin_kit.hpp) makes the C entry points.
struct OpenclPlugin {
  static constexpr const char* kName = "opencl";
  static constexpr const char* kCompilerVersion = kiln::ocl::kCompilerVersion;

  static int32_t device_count() { return kiln::ocl::device_list().count(); }
  static std::string no_devices_reason() { return kiln::ocl::device_list().why_none(); }

  static kiln::plugin_kit::DeviceProperties device_properties(int32_t index) {
    const kiln::ocl::DeviceInfo& d = kiln::ocl::device_list().at(index);
    // Per-layer compile units (docs/CACHE.md): every layer's pieces compile
    // once, and their step time stays within issue 20's 3% of whole graphs
    // on PoCL (each unit is a program of its own and its fusion stops at the
    // unit's border, but the queue is not finished between units).
    const std::string fp = kiln::ocl::fingerprint(d);
    return {d.name, d.vendor,        d.platform_name + " " + d.driver_version,
            d.kind, d.memory_bytes,  d.compute_units,
            fp,     d.low_precision, /*whole_graph_units=*/false};
  }

  static kiln_device* device_open(int32_t index, int32_t) {
    const kiln::ocl::DeviceInfo& d = kiln::ocl::device_list().at(index);
    auto dev = std::make_unique<kiln_device>();
    dev->index = index;
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
    dev->profile = kiln::plugin_kit::env_flag("KILN_OPENCL_PROFILE");
    return dev.release();
  }

  static kiln_buffer* buffer_alloc(kiln_device* device, uint64_t size) {
    auto b = std::make_unique<kiln_buffer>();
    b->mem = create_buffer(device->context, size, "allocating " + std::to_string(size) + " bytes");
    b->size = size;
    // PoCL backs a buffer with host memory whose pages the first write maps:
    // zeroing it now (queued, so before any later command) moves those page
    // faults from the first training step into setup (3-4 ms of the
    // hidden-64 test model's 16 ms first step, issue 32).
    if (device->info->is_pocl) {
      const cl_uint zero = 0;
      const cl_int status = clEnqueueFillBuffer(device->queue, b->mem, &zero, sizeof(zero), 0,
                                                std::max<uint64_t>(size, 64) / 4 * 4, 0, nullptr, nullptr);
      if (status != CL_SUCCESS) clReleaseMemObject(b->mem);
      kiln::ocl::cl_check(status, "zeroing a new buffer");
    }
    return b.release();
  }
  static void buffer_free(kiln_device*, kiln_buffer* buffer) {
    // Safe with commands still queued: OpenCL keeps the memory until they end.
    clReleaseMemObject(buffer->mem);
    delete buffer;
  }
  static uint64_t buffer_size(const kiln_buffer* b) { return b->size; }
  static void buffer_write(kiln_device* dev, kiln_buffer* b, uint64_t offset, const void* host, uint64_t size) {
    // Blocking: the caller may reuse its memory as soon as we return.
    kiln::ocl::cl_check(clEnqueueWriteBuffer(dev->queue, b->mem, CL_TRUE, offset, size, host, 0, nullptr, nullptr),
                        "buffer_write");
  }
  static void buffer_read(kiln_device* dev, kiln_buffer* b, uint64_t offset, void* host, uint64_t size) {
    kiln::ocl::cl_check(clEnqueueReadBuffer(dev->queue, b->mem, CL_TRUE, offset, size, host, 0, nullptr, nullptr),
                        "buffer_read");
  }
  static void buffer_copy(kiln_device* dev, kiln_buffer* src, uint64_t src_offset, kiln_buffer* dst,
                          uint64_t dst_offset, uint64_t size) {
    const bool overlap = src == dst && src_offset < dst_offset + size && dst_offset < src_offset + size;
    if (!overlap) {
      kiln::ocl::cl_check(
          clEnqueueCopyBuffer(dev->queue, src->mem, dst->mem, src_offset, dst_offset, size, 0, nullptr, nullptr),
          "buffer_copy");
      return;
    }
    // OpenCL refuses overlapping copies (memmove semantics): go through a
    // temporary buffer.
    cl_mem tmp = create_buffer(dev->context, size, "buffer_copy scratch");
    cl_int s1 = clEnqueueCopyBuffer(dev->queue, src->mem, tmp, src_offset, 0, size, 0, nullptr, nullptr);
    cl_int s2 = s1 == CL_SUCCESS
                    ? clEnqueueCopyBuffer(dev->queue, tmp, dst->mem, 0, dst_offset, size, 0, nullptr, nullptr)
                    : s1;
    clReleaseMemObject(tmp);
    kiln::ocl::cl_check(s2, "buffer_copy");
  }

  // Decode + check the IR, fuse, generate one OpenCL C program for the
  // whole graph and build it in a context of its own on the target device.
  static std::vector<uint8_t> compile(const kiln_compile_args& args) {
    const kiln::ocl::DeviceInfo& d = kiln::ocl::device_list().at(args.device_index);
    kiln::ir::DecodedGraph g;
    kiln::ocl::decode_ir(args.ir, args.ir_size, &g);
    kiln::backend::require_supported(g, supported());
    const std::vector<kiln::ocl::NodeInfo> info = kiln::ocl::analyze(g);
    kiln::ocl::Program prog = kiln::ocl::generate(g, info, kiln::ocl::target_for(d));

    kiln::ocl::ExecutableImage image;
    image.stamp = {kiln::ocl::kCompilerVersion, kiln::ocl::fingerprint(d), d.name};
    if (!prog.source.empty()) {
      const auto serial = kiln::ocl::pocl_serial(d);  // declared first: held until the context is gone
      kiln::ocl::ScopedContext ctx(args.device_index);
      cl_program program = kiln::ocl::build_from_source(ctx.get(), d.id, prog.source);
      try {
        // Before the binary is read, so that it holds them (work_group_builds.h).
        kiln::ocl::build_work_groups(ctx.get(), d.id, program, prog.schedule);
        image.binary = kiln::ocl::program_binary(program);
      } catch (...) {
        clReleaseProgram(program);
        throw;
      }
      clReleaseProgram(program);
    }
    image.source = std::move(prog.source);
    image.schedule = std::move(prog.schedule);
    return kiln::ocl::encode_executable(image);
  }

  static kiln_loaded_executable* load(kiln_device* dev, const uint8_t* bytes, size_t size) {
    kiln::ocl::ExecutableImage image = kiln::ocl::decode_executable(bytes, size);
    auto exe = std::make_unique<kiln_loaded_executable>();
    exe->device = dev;
    exe->schedule = std::move(image.schedule);
    const kiln::ocl::Schedule& s = exe->schedule;
    if (!s.kernel_names.empty()) {
      if (image.source.empty()) fail(KILN_ERR_CORRUPT, "opencl executable has kernels but no source");
      const auto serial = kiln::ocl::pocl_serial(*dev->info);
      exe->program = kiln::ocl::load_program(dev->context, dev->info->id, image.binary, image.source, &exe->rebuilt);
      for (const std::string& name : s.kernel_names) {
        cl_int status = CL_SUCCESS;
        cl_kernel k = clCreateKernel(exe->program, name.c_str(), &status);
        if (status == CL_INVALID_KERNEL_NAME)
          fail(KILN_ERR_CORRUPT, "opencl executable names kernel " + name + " its program lacks");
        kiln::ocl::cl_check(status, "clCreateKernel " + name);
        exe->kernels.push_back(k);
      }
      // PoCL loads each kernel's work-group function (built at compile, in
      // the binary) at its first enqueue; run every launch once here, on
      // scratch, so that the first step does not (work_group_builds.h).
      if (dev->info->is_pocl) kiln::ocl::build_work_groups(dev->context, dev->info->id, exe->program, s);
    }
    if (!s.arena_in_slot0 && s.arena_bytes > 0)
      exe->arena = create_buffer(dev->context, s.arena_bytes, "allocating the executable's arena");
    if (!s.checks.empty()) exe->flag = create_buffer(dev->context, sizeof(cl_int), "allocating the error flag");
    for (const kiln::ocl::Step& st : s.steps)
      if (st.kind == kiln::ocl::StepKind::Gemm)
        exe->gemm_temp_bytes = std::max(exe->gemm_temp_bytes, kiln::ocl::gemm_temp_bytes(dev->queue, st));
    return exe.release();
  }
  static void loaded_free(kiln_device*, kiln_loaded_executable* loaded) {
    if (loaded == nullptr) return;
    const auto serial = kiln::ocl::pocl_serial(*loaded->device->info);  // it releases a program
    delete loaded;
  }
  static const kiln_device* loaded_device(const kiln_loaded_executable* exe) { return exe->device; }
  static const std::vector<uint64_t>& slot_bytes(const kiln_loaded_executable* exe) { return exe->schedule.slot_bytes; }

  static void execute(kiln_device* dev, kiln_loaded_executable* exe, kiln_buffer* const* slots) {
    const kiln::ocl::Schedule& s = exe->schedule;
    auto resolve = [&](const kiln::ocl::Ref& r) -> Resolved {
      switch (r.mem) {
        case kiln::ocl::Mem::Slot: return {slots[r.slot]->mem, r.offset};
        case kiln::ocl::Mem::Arena: return {s.arena_in_slot0 ? slots[0]->mem : exe->arena, r.offset};
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
          kiln::ocl::run_gemm(q, st, {a.mem, b.mem, c.mem, a.offset, b.offset, c.offset}, dev->gemm_temp);
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
        dev->times.add(st.label, kiln::plugin_kit::seconds_since(t0));
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
  }

  static void synchronize(kiln_device* device) { kiln::ocl::cl_check(clFinish(device->queue), "clFinish"); }
  static bool op_supported(int32_t op) { return supported().contains(op); }
  // Only the attention ops have shapes their kernels refuse (attention_node.h,
  // attention_plan.h): such a node runs as its decomposition, the chain, on
  // every device of the list. The dropout twins run the same kernels plus a
  // local array of keep factors, which the plan counts.
  static bool op_supported_node(int32_t op, const std::vector<kiln::plugin_kit::NodeTensor>& inputs,
                                const std::vector<kiln::plugin_kit::NodeTensor>& /*outputs*/) {
    return kiln::backend::attention_node_supported(op, inputs, [](const kiln::backend::AttentionNode& a) {
      auto& devices = kiln::ocl::device_list();
      for (int32_t i = 0; i < devices.count(); ++i)
        if (!kiln::ocl::plan_attention(kiln::ocl::target_for(devices.at(i)), a.T, a.D, a.dropout, nullptr))
          return false;
      return true;
    });
  }
};

}  // namespace

// Cheap by contract: no platform query (drivers can take seconds to
// initialise). The plugin links the ICD loader, so reaching this function
// means libOpenCL loaded; whether any platform exists is device_count's
// question, answered with 0 devices rather than a refusal.
KILN_PLUGIN_KIT_EXPORT(OpenclPlugin)
