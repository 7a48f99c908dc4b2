// The OpenCL devices this process can see, in one flat list: device index i
// is the i-th device of the platforms in the order the ICD loader reports
// them, so indices stay stable while the installed drivers do.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common.h"
#include "kiln/plugin_kit.hpp"

#pragma GCC visibility push(hidden)

namespace kiln::ocl {

struct DeviceInfo {
  cl_platform_id platform = nullptr;
  cl_device_id id = nullptr;
  std::string platform_name, platform_version;
  std::string name, vendor, driver_version, device_version;
  int32_t kind = KILN_DEVICE_OTHER;  // kiln_device_kind
  uint64_t memory_bytes = 0;
  int32_t compute_units = 0;
  size_t max_work_group_size = 1;
  uint64_t local_mem_bytes = 0;
  bool is_pocl = false;
  uint32_t low_precision = 0;  // KILN_LOWP_* bits
  uint32_t float_vector = 1;   // CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT
  // Platform, device, driver and this plugin's compiler version, joined:
  // what fingerprint() hashes with the plugin's compile-time choices.
  std::string identity;
};

// 64 hex digits over what determines compiled code: the device's identity
// and the environment choices that change what compile generates
// (KILN_OPENCL_GEMM, KILN_OPENCL_GPU_CODEGEN), read now, so the compile
// cache never hands an executable to a process that would compile another.
std::string fingerprint(const DeviceInfo& device);

// KILN_OPENCL_GPU_CODEGEN=1, for tests: generate the GPU variants (work
// group per row) whatever the device.
bool gpu_codegen_forced();

// The devices, enumerated once. No platform at all (no ICD, or
// OCL_ICD_VENDORS pointing at an empty directory) is an empty list, with
// why_none() saying so, not an error.
kiln::plugin_kit::DeviceList<DeviceInfo>& device_list();

// A context of its own on one device, for compile: compiles need no opened
// kiln_device and may run concurrently. Released at the end of the compile
// (kept for the process, PoCL's build state shows up as leaked at exit).
class ScopedContext {
 public:
  explicit ScopedContext(int32_t index);
  ~ScopedContext();
  ScopedContext(const ScopedContext&) = delete;
  ScopedContext& operator=(const ScopedContext&) = delete;
  cl_context get() const { return ctx_; }

 private:
  cl_context ctx_ = nullptr;
};

using plugin_kit::fingerprint_hex;

}  // namespace kiln::ocl

#pragma GCC visibility pop
