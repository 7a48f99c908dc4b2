#include "device.h"

#include <cstdio>
#include <cstdlib>

#include "gemm_choice.h"
#include "version.h"

namespace kiln::ocl {
namespace {

std::string platform_string(cl_platform_id p, cl_platform_info what) {
  size_t size = 0;
  if (clGetPlatformInfo(p, what, 0, nullptr, &size) != CL_SUCCESS || size == 0) return {};
  std::string s(size, '\0');
  if (clGetPlatformInfo(p, what, size, s.data(), nullptr) != CL_SUCCESS) return {};
  s.resize(s.find('\0') == std::string::npos ? s.size() : s.find('\0'));
  return s;
}

std::string device_string(cl_device_id d, cl_device_info what) {
  size_t size = 0;
  if (clGetDeviceInfo(d, what, 0, nullptr, &size) != CL_SUCCESS || size == 0) return {};
  std::string s(size, '\0');
  if (clGetDeviceInfo(d, what, size, s.data(), nullptr) != CL_SUCCESS) return {};
  s.resize(s.find('\0') == std::string::npos ? s.size() : s.find('\0'));
  // Drivers pad some strings with spaces.
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

template <class T>
T device_value(cl_device_id d, cl_device_info what, T fallback) {
  T v{};
  return clGetDeviceInfo(d, what, sizeof(T), &v, nullptr) == CL_SUCCESS ? v : fallback;
}

// Extensions are one space-separated string; match whole names only.
bool has_extension(const std::string& extensions, const std::string& name) {
  size_t pos = 0;
  while ((pos = extensions.find(name, pos)) != std::string::npos) {
    const size_t end = pos + name.size();
    if ((pos == 0 || extensions[pos - 1] == ' ') && (end == extensions.size() || extensions[end] == ' ')) return true;
    pos = end;
  }
  return false;
}

int32_t kind_of(cl_device_type t) {
  if (t & CL_DEVICE_TYPE_GPU) return KILN_DEVICE_GPU;
  if (t & CL_DEVICE_TYPE_CPU) return KILN_DEVICE_CPU;
  if (t & CL_DEVICE_TYPE_ACCELERATOR) return KILN_DEVICE_ACCELERATOR;
  return KILN_DEVICE_OTHER;
}

std::vector<DeviceInfo> enumerate(std::string* why_none) {
  cl_uint num_platforms = 0;
  cl_int status = clGetPlatformIDs(0, nullptr, &num_platforms);
  // The ICD loader reports "no platform" as CL_PLATFORM_NOT_FOUND_KHR
  // (-1001); that is a machine without OpenCL drivers, i.e. no devices.
  if (status == -1001 || num_platforms == 0) {
    const char* vendors = std::getenv("OCL_ICD_VENDORS");
    *why_none = std::string("no OpenCL platform: the ICD loader found no driver in ") +
                (vendors != nullptr ? std::string("OCL_ICD_VENDORS=") + vendors : "/etc/OpenCL/vendors") +
                "; install one (pocl-opencl-icd for CPUs, or the GPU vendor's OpenCL driver)";
    return {};
  }
  cl_check(status, "clGetPlatformIDs");
  std::vector<cl_platform_id> platforms(num_platforms);
  cl_check(clGetPlatformIDs(num_platforms, platforms.data(), nullptr), "clGetPlatformIDs");
  std::vector<DeviceInfo> out;
  for (cl_platform_id p : platforms) {
    cl_uint n = 0;
    // A platform without devices (or a broken one) must not hide the others.
    if (clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, nullptr, &n) != CL_SUCCESS || n == 0) continue;
    std::vector<cl_device_id> ids(n);
    if (clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, n, ids.data(), nullptr) != CL_SUCCESS) continue;
    for (cl_device_id d : ids) {
      DeviceInfo info;
      info.platform = p;
      info.id = d;
      info.platform_name = platform_string(p, CL_PLATFORM_NAME);
      info.platform_version = platform_string(p, CL_PLATFORM_VERSION);
      info.name = device_string(d, CL_DEVICE_NAME);
      info.vendor = device_string(d, CL_DEVICE_VENDOR);
      info.driver_version = device_string(d, CL_DRIVER_VERSION);
      info.device_version = device_string(d, CL_DEVICE_VERSION);
      info.kind = kind_of(device_value<cl_device_type>(d, CL_DEVICE_TYPE, 0));
      info.memory_bytes = device_value<cl_ulong>(d, CL_DEVICE_GLOBAL_MEM_SIZE, 0);
      info.compute_units = static_cast<int32_t>(device_value<cl_uint>(d, CL_DEVICE_MAX_COMPUTE_UNITS, 0));
      info.max_work_group_size = device_value<size_t>(d, CL_DEVICE_MAX_WORK_GROUP_SIZE, 1);
      info.local_mem_bytes = device_value<cl_ulong>(d, CL_DEVICE_LOCAL_MEM_SIZE, 0);
      // Any OpenCL device loads and stores 16-bit words (ushort, and
      // vload_half for f16 is core); f16 arithmetic needs cl_khr_fp16.
      info.low_precision = KILN_LOWP_16BIT_STORAGE;
      if (has_extension(device_string(d, CL_DEVICE_EXTENSIONS), "cl_khr_fp16"))
        info.low_precision |= KILN_LOWP_F16_ARITHMETIC;
      info.is_pocl = info.platform_name.find("Portable Computing Language") != std::string::npos;
      info.float_vector = device_value<cl_uint>(d, CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT, 1);
      info.identity = info.platform_name + "|" + info.platform_version + "|" + info.name + "|" + info.vendor + "|" +
                      info.driver_version + "|" + info.device_version + "|" +
                      device_string(d, CL_DEVICE_OPENCL_C_VERSION) + "|" + kCompilerVersion;
      out.push_back(std::move(info));
    }
  }
  return out;
}

}  // namespace

bool gpu_codegen_forced() {
  const char* gpu = std::getenv("KILN_OPENCL_GPU_CODEGEN");
  return gpu != nullptr && *gpu != '\0' && *gpu != '0';
}

std::string fingerprint(const DeviceInfo& device) {
  return fingerprint_hex(device.identity + "|gemm=" + gemm_policy_key() + (gpu_codegen_forced() ? "|gpu-codegen" : ""));
}

kiln::plugin_kit::DeviceList<DeviceInfo>& device_list() {
  static kiln::plugin_kit::DeviceList<DeviceInfo> list(
      "opencl", enumerate, "the OpenCL platforms found have no devices (clinfo lists what the ICD loader sees)");
  return list;
}

ScopedContext::ScopedContext(int32_t index) {
  const DeviceInfo& info = device_list().at(index);
  cl_int status = CL_SUCCESS;
  cl_context_properties props[] = {CL_CONTEXT_PLATFORM, reinterpret_cast<cl_context_properties>(info.platform), 0};
  ctx_ = clCreateContext(props, 1, &info.id, nullptr, nullptr, &status);
  cl_check(status, "clCreateContext on " + info.name);
}

ScopedContext::~ScopedContext() {
  if (ctx_ != nullptr) clReleaseContext(ctx_);
}

}  // namespace kiln::ocl
