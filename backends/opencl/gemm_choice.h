// Which GEMM a MATMUL node runs on OpenCL: CLBlast's, or kiln's generated
// kernel (codegen_gemm.cpp). CLBlast builds its programs in-process at its
// first call per kind and cannot hand the binaries over, so after `kiln
// precompile` its GEMMs still compile in the first training step (minutes
// on PoCL); kiln's kernel is part of the unit's program, whose binary the
// compile cache stores. The choice is made per shape at compile and changes
// the executable, so the policy is part of the device fingerprint (the
// compile cache's key).
//
// KILN_OPENCL_GEMM selects the policy:
//   auto     (default) kiln's kernel on CPU devices for the shapes where it
//            measured at least as fast as CLBlast with kiln's PoCL tuning
//            (kiln_gemm_wins), CLBlast elsewhere
//   kiln     kiln's kernel for every MATMUL
//   clblast  CLBlast for every MATMUL (the plugin before opencl-4)
#pragma once

#include <string>

#include "lower.h"

#pragma GCC visibility push(hidden)

namespace kiln::ocl {

enum class GemmPolicy : uint8_t { Auto, Kiln, Clblast };

// KILN_OPENCL_GEMM, read now. Throws KILN_ERR_INVALID_ARGUMENT naming the
// accepted values when it is set to anything else.
GemmPolicy gemm_policy();
const char* gemm_policy_name(GemmPolicy p);

// What the device fingerprint records: the policy's name, or the variable's
// text when it is no policy (the compile then fails with gemm_policy's error).
std::string gemm_policy_key();

// Whether `auto` runs this MATMUL (its NodeInfo) on kiln's kernel on a
// device of kind `cpu_device`.
bool kiln_gemm_wins(const NodeInfo& inf, bool cpu_device);

}  // namespace kiln::ocl

#pragma GCC visibility pop
