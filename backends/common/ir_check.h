// Shared by the opencl and vulkan plugins: a decoded graph refused for ops the
// plugin does not list, validated by the op rules every host and plugin share
// (kiln/op_rules.hpp), then reduced to the sizes its kernels are specialised
// to. Code generation trusts these sizes, so nothing reaches a kernel unchecked.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kiln/ir.h"
#include "kiln/ir_decode.hpp"
#include "kiln/plugin_kit.hpp"
#include "node_sizes.h"

#pragma GCC visibility push(hidden)

namespace kiln::backend {

using plugin_kit::fail;
using plugin_kit::Failure;

// A plugin's support list: the ops its compile accepts and its op_supported
// claims (a host collective is never in one).
struct SupportList {
  const kiln_op* ops;
  size_t size;
  const char* backend;  // names the plugin in the refusal
  bool contains(int32_t op) const;
};

// Throws Failure KILN_ERR_UNSUPPORTED naming the first node whose op is not in
// `supported` (checked before validation: an op the plugin lacks is a
// capability gap, whatever its shapes).
void require_supported(const ir::DecodedGraph& g, const SupportList& supported);

// Throws Failure KILN_ERR_INVALID_ARGUMENT naming the node for a graph that
// breaks its ops' shape rules; otherwise the kernel sizes of every node.
std::vector<NodeInfo> analyze(const ir::DecodedGraph& g);

// Decodes IR bytes, mapping decoder errors to kiln error codes; `backend`
// names the plugin in the message for an op it does not know.
void decode_ir(const uint8_t* bytes, size_t size, ir::DecodedGraph* g, const char* backend);

const char* op_name(kiln_op op);

}  // namespace kiln::backend

#pragma GCC visibility pop
