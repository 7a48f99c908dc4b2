#include "ir_check.h"

#include <algorithm>
#include <string>

#include "kiln/op_rules.hpp"

namespace kiln::backend {

const char* op_name(kiln_op op) { return kiln_op_name(op); }

void decode_ir(const uint8_t* bytes, size_t size, ir::DecodedGraph* g, const char* backend) {
  if (bytes == nullptr && size != 0) fail(KILN_ERR_INVALID_ARGUMENT, "compile: ir is NULL");
  std::string err = ir::decode(bytes, size, g);
  if (err.empty()) return;
  // An op code from a newer IR is a capability gap, not corruption.
  if (err.rfind("IR node has unknown op", 0) == 0)
    fail(KILN_ERR_UNSUPPORTED, err + " (not supported by the " + backend + " backend)");
  fail(KILN_ERR_CORRUPT, err);
}

bool SupportList::contains(int32_t op) const {
  // Compared as integers: a code outside the table (op_supported may be asked
  // anything) is not a valid kiln_op value to convert to.
  return std::any_of(ops, ops + size, [op](kiln_op o) { return static_cast<int32_t>(o) == op; });
}

void require_supported(const ir::DecodedGraph& g, const SupportList& supported) {
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (!supported.contains(g.nodes[i].op))
      fail(KILN_ERR_UNSUPPORTED, "node " + std::to_string(i) + ": op " + op_name(g.nodes[i].op) +
                                     " is not supported by the " + supported.backend + " backend");
}

std::vector<NodeInfo> analyze(const ir::DecodedGraph& g) {
  const std::string err = ir::check_graph(g);
  if (!err.empty()) fail(KILN_ERR_INVALID_ARGUMENT, err);
  return node_sizes(g);
}

}  // namespace kiln::backend
