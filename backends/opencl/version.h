// The code generator's identity. It keys the compile cache and is checked
// when executable bytes are loaded: bump it whenever generated kernels, the
// schedule or the executable format change.
#pragma once

namespace kiln::ocl {
inline constexpr const char* kCompilerVersion = "opencl-5";
}  // namespace kiln::ocl
