// A checked graph (backends/common/ir_check.h) turned into a Schedule: one
// or more dispatches of the embedded shaders per node. Every buffer window
// is kept within the device's maxStorageBufferRange by splitting a dispatch
// into chunks (rows of a row-wise op, elements of an elementwise one,
// rows/columns/depth of a GEMM), so tensors larger than one binding work.
#pragma once

#include <vector>

#include "device.h"
#include "ir_check.h"
#include "schedule.h"

#pragma GCC visibility push(hidden)

namespace kiln::vk {

// The ops lower() implements: the plugin's support list.
extern const backend::SupportList kSupported;

using backend::NodeInfo;

// Lowers the ops of kSupported; throws
// KILN_ERR_UNSUPPORTED for a tensor no chunking can bind,
// KILN_ERR_INVALID_ARGUMENT for shapes the shaders cannot index.
Schedule lower(const ir::DecodedGraph& g, const std::vector<NodeInfo>& info, const DeviceInfo& device);

}  // namespace kiln::vk

#pragma GCC visibility pop
