// GEMM through CLBlast, and the tuning parameters the plugin ships for
// devices CLBlast has no tuning for (PoCL above all).
#pragma once

#include <cstdint>
#include <string>

#include "device.h"
#include "schedule.h"

#pragma GCC visibility push(hidden)

namespace kiln::ocl {

struct GemmOperands {
  cl_mem a, b, c;
  uint64_t a_offset, b_offset, c_offset;  // elements
};

// Enqueues C = op(A) op(B) + beta C, row-major, for `step` (a Gemm step).
// `temp` (may be null) is scratch of at least gemm_temp_bytes() bytes.
void run_gemm(cl_command_queue queue, const Step& step, const GemmOperands& ops, cl_mem temp);

// Scratch CLBlast needs for `step` when called with a temp buffer.
uint64_t gemm_temp_bytes(cl_command_queue queue, const Step& step);

// Installs the plugin's GEMM parameters for `device` into CLBlast, once per
// device per process. Returns a one-line description of what was applied
// ("" when CLBlast's own tuning is kept). KILN_OPENCL_GEMM_TUNING=clblast
// keeps CLBlast's choice for every device.
std::string apply_gemm_tuning(const DeviceInfo& device);

}  // namespace kiln::ocl

#pragma GCC visibility pop
