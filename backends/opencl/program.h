// Building OpenCL programs: from source (at compile, and as the fallback at
// load), from stored binaries (at load), and reading binaries back out.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common.h"

#pragma GCC visibility push(hidden)

namespace kiln::ocl {

// Options every program is built with. Deliberately no
// -cl-fast-relaxed-math / -cl-mad-enable: results must track the reference.
inline constexpr const char* kBuildOptions = "-cl-std=CL1.2";

// Throws KILN_ERR_DEVICE with the start of the build log on failure.
cl_program build_from_source(cl_context ctx, cl_device_id device, const std::string& source);

// The program's binary for its one device.
std::vector<uint8_t> program_binary(cl_program program);

// From `binary` if the driver accepts it; otherwise (CL_INVALID_BINARY, a
// binary from another driver version, a failed build) from `source`, with a
// warning on stderr. `rebuilt` says which happened.
cl_program load_program(cl_context ctx, cl_device_id device, const std::vector<uint8_t>& binary,
                        const std::string& source, bool* rebuilt);

}  // namespace kiln::ocl

#pragma GCC visibility pop
