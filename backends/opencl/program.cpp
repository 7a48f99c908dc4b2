#include "program.h"

#include <cstdio>

namespace kiln::ocl {
namespace {

std::string build_log(cl_program program, cl_device_id device) {
  size_t size = 0;
  if (clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, 0, nullptr, &size) != CL_SUCCESS) return {};
  std::string log(size, '\0');
  if (clGetProgramBuildInfo(program, device, CL_PROGRAM_BUILD_LOG, size, log.data(), nullptr) != CL_SUCCESS) return {};
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n' || log.back() == ' ')) log.pop_back();
  // Errors are one line (the host prints them after "kiln: error:").
  for (char& c : log)
    if (c == '\n' || c == '\r') c = ' ';
  if (log.size() > 600) log = log.substr(0, 600) + " ...";
  return log;
}

}  // namespace

cl_program build_from_source(cl_context ctx, cl_device_id device, const std::string& source) {
  const char* text = source.c_str();
  const size_t length = source.size();
  cl_int status = CL_SUCCESS;
  cl_program program = clCreateProgramWithSource(ctx, 1, &text, &length, &status);
  cl_check(status, "clCreateProgramWithSource");
  status = clBuildProgram(program, 1, &device, kBuildOptions, nullptr, nullptr);
  if (status != CL_SUCCESS) {
    const std::string log = build_log(program, device);
    clReleaseProgram(program);
    fail(KILN_ERR_DEVICE, "building the generated OpenCL program failed: " + cl_status_name(status) +
                              (log.empty() ? std::string() : ": " + log));
  }
  return program;
}

std::vector<uint8_t> program_binary(cl_program program) {
  size_t size = 0;
  cl_check(clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof(size), &size, nullptr),
           "clGetProgramInfo(CL_PROGRAM_BINARY_SIZES)");
  std::vector<uint8_t> binary(size);
  unsigned char* ptr = binary.data();
  if (size > 0)
    cl_check(clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof(ptr), &ptr, nullptr),
             "clGetProgramInfo(CL_PROGRAM_BINARIES)");
  return binary;
}

cl_program load_program(cl_context ctx, cl_device_id device, const std::vector<uint8_t>& binary,
                        const std::string& source, bool* rebuilt) {
  *rebuilt = false;
  std::string why = "the executable holds no program binary";
  if (!binary.empty()) {
    const unsigned char* bin = binary.data();
    const size_t length = binary.size();
    cl_int bin_status = CL_SUCCESS, status = CL_SUCCESS;
    cl_program program = clCreateProgramWithBinary(ctx, 1, &device, &length, &bin, &bin_status, &status);
    if (status == CL_SUCCESS && bin_status == CL_SUCCESS) {
      status = clBuildProgram(program, 1, &device, kBuildOptions, nullptr, nullptr);
      if (status == CL_SUCCESS) return program;
      why = "building it failed with " + cl_status_name(status);
    } else {
      why = "the driver refused it: " + cl_status_name(status != CL_SUCCESS ? status : bin_status);
    }
    if (program != nullptr) clReleaseProgram(program);
  }
  std::fprintf(stderr, "kiln opencl: warning: program binary not usable (%s); rebuilding from source\n", why.c_str());
  *rebuilt = true;
  return build_from_source(ctx, device, source);
}

}  // namespace kiln::ocl
