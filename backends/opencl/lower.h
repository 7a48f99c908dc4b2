// The IR checks shared by the plugins (backends/common/ir_check.h), under
// the names the OpenCL code generator uses.
#pragma once

#include "bytes.h"
#include "common.h"
#include "ir_check.h"

#pragma GCC visibility push(hidden)

namespace kiln::ocl {

using backend::analyze;
using backend::NodeInfo;
using backend::op_name;
using backend::PermutePlan;
using backend::Reader;
using backend::Writer;

inline void decode_ir(const uint8_t* bytes, size_t size, ir::DecodedGraph* g) {
  backend::decode_ir(bytes, size, g, "opencl");
}

}  // namespace kiln::ocl

#pragma GCC visibility pop
