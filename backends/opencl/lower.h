// The IR checks shared by the plugins (backends/common/ir_check.h), under
// the names the OpenCL code generator uses.
#pragma once

#include "common.h"
#include "ir_check.h"
#include "kiln/plugin_kit.hpp"

#pragma GCC visibility push(hidden)

namespace kiln::ocl {

using backend::analyze;
using backend::NodeInfo;
using backend::op_name;
using backend::PermutePlan;
using plugin_kit::Reader;
using plugin_kit::Writer;

inline void decode_ir(const uint8_t* bytes, size_t size, ir::DecodedGraph* g) {
  backend::decode_ir(bytes, size, g, "opencl");
}

}  // namespace kiln::ocl

#pragma GCC visibility pop
