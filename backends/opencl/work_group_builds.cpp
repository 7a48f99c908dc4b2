#include "work_group_builds.h"

#include <algorithm>
#include <array>
#include <climits>
#include <set>
#include <tuple>
#include <vector>

namespace kiln::ocl {
namespace {

// Releases what a warm-up run created, also when a call throws.
struct Scratch {
  cl_command_queue queue = nullptr;
  std::vector<cl_mem> buffers;
  std::vector<cl_kernel> kernels;
  ~Scratch() {
    if (queue != nullptr) clFinish(queue);
    for (cl_kernel k : kernels)
      if (k != nullptr) clReleaseKernel(k);
    for (cl_mem m : buffers) clReleaseMemObject(m);
    if (queue != nullptr) clReleaseCommandQueue(queue);
  }
};

cl_mem zeroed(cl_context ctx, cl_command_queue queue, uint64_t bytes, Scratch& scratch) {
  // OpenCL buffers cannot be empty; fills go in 4-byte patterns.
  const uint64_t size = std::max<uint64_t>((bytes + 3) / 4 * 4, 64);
  cl_int status = CL_SUCCESS;
  cl_mem m = clCreateBuffer(ctx, CL_MEM_READ_WRITE, size, nullptr, &status);
  cl_check(status, "allocating " + std::to_string(size) + " scratch bytes for the work-group builds");
  scratch.buffers.push_back(m);
  const cl_uint zero = 0;
  cl_check(clEnqueueFillBuffer(queue, m, &zero, sizeof(zero), 0, size, 0, nullptr, nullptr),
           "zeroing the work-group builds' scratch");
  return m;
}

}  // namespace

void build_work_groups(cl_context ctx, cl_device_id device, cl_program program, const Schedule& s) {
  Scratch scratch;
  cl_int status = CL_SUCCESS;
  scratch.queue = clCreateCommandQueue(ctx, device, 0, &status);
  cl_check(status, "clCreateCommandQueue for the work-group builds");
  std::vector<cl_mem> slots;
  for (uint64_t bytes : s.slot_bytes) slots.push_back(zeroed(ctx, scratch.queue, bytes, scratch));
  if (slots.empty()) slots.push_back(zeroed(ctx, scratch.queue, 0, scratch));
  const cl_mem arena = s.arena_in_slot0 ? slots[0] : zeroed(ctx, scratch.queue, s.arena_bytes, scratch);
  // The flag starts as "no failure", as execute sets it.
  const cl_mem flag = zeroed(ctx, scratch.queue, sizeof(cl_int), scratch);
  const cl_int none = INT_MAX;
  cl_check(clEnqueueFillBuffer(scratch.queue, flag, &none, sizeof(none), 0, sizeof(none), 0, nullptr, nullptr),
           "setting the work-group builds' flag");
  scratch.kernels.assign(s.kernel_names.size(), nullptr);

  using Launch = std::tuple<uint32_t, uint32_t, std::array<uint64_t, 3>, std::array<uint64_t, 3>>;
  std::set<Launch> done;
  for (const Step& st : s.steps) {
    if (st.kind != StepKind::Kernel) continue;
    const Launch launch{
        st.kernel, st.dims, {st.global[0], st.global[1], st.global[2]}, {st.local[0], st.local[1], st.local[2]}};
    if (!done.insert(launch).second) continue;
    cl_kernel& k = scratch.kernels.at(st.kernel);
    if (k == nullptr) {
      k = clCreateKernel(program, s.kernel_names[st.kernel].c_str(), &status);
      cl_check(status, "clCreateKernel " + s.kernel_names[st.kernel]);
    }
    for (size_t i = 0; i < st.args.size(); ++i) {
      const Ref& r = st.args[i];
      const cl_mem mem = r.mem == Mem::Slot ? slots.at(r.slot) : r.mem == Mem::Arena ? arena : flag;
      const cl_ulong offset = r.offset;
      cl_int e1 = clSetKernelArg(k, static_cast<cl_uint>(2 * i), sizeof(cl_mem), &mem);
      cl_int e2 = clSetKernelArg(k, static_cast<cl_uint>(2 * i + 1), sizeof(cl_ulong), &offset);
      cl_check(e1 != CL_SUCCESS ? e1 : e2, "setting the arguments of " + s.kernel_names[st.kernel]);
    }
    size_t global[3], local[3];
    for (int i = 0; i < 3; ++i) global[i] = st.global[i], local[i] = st.local[i];
    cl_check(clEnqueueNDRangeKernel(scratch.queue, k, st.dims, nullptr, global, st.local[0] ? local : nullptr, 0,
                                    nullptr, nullptr),
             "node " + std::to_string(st.node) + ": building the work groups of " + s.kernel_names[st.kernel]);
  }
  cl_check(clFinish(scratch.queue), "clFinish after the work-group builds");
}

}  // namespace kiln::ocl
