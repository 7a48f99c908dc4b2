// An op code that a backend's kernel dispatch does not know is refused at
// compile as KILN_ERR_UNSUPPORTED (so the host can expand or move the node),
// never run as some other op: on cpu, OpenCL and Vulkan, for a code in the
// table that no backend has a kernel for (the composite SQUARED_RELU and its
// gradient) and for codes past the table (a newer host's op), which reach
// the plugin by patching the serialized IR.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/error.h"
#include "core/registry.h"
#include "graph/graph.h"
#include "graph/memory_plan.h"
#include "graph/serialize.h"
#include "kiln/ops.h"

namespace kiln {
namespace {

struct Refusal {
  int32_t code = KILN_OK;
  std::string message;
};

Refusal compile(const Device& dev, const std::vector<uint8_t>& ir) {
  const kiln_plugin_api* api = dev.plugin().raw_table();
  kiln_compile_args c{};
  c.struct_size = sizeof(c);
  c.device_index = 0;
  c.ir = ir.data();
  c.ir_size = ir.size();
  kiln_error* err = api->compile(&c);
  if (err == nullptr) {
    api->executable_bytes_free(c.executable);
    return {};
  }
  Refusal r{api->error_code(err), api->error_message(err)};
  api->error_destroy(err);
  return r;
}

std::vector<uint8_t> serialized(const graph::Graph& g) { return graph::serialize(g, graph::plan_memory(g)); }

// A one-node graph y = op(x) (x and dy for a gradient), serialized.
std::vector<uint8_t> one_node(kiln_op op) {
  graph::Graph g;
  graph::ValueId x = g.input("x", KILN_F32, {5, 7});
  g.output("y",
           op == KILN_OP_SQUARED_RELU ? g.squared_relu(x) : g.squared_relu_grad(x, g.input("dy", KILN_F32, {5, 7})));
  return serialized(g);
}

template <typename T>
T read_at(const std::vector<uint8_t>& b, size_t at) {
  T v;
  std::memcpy(&v, b.data() + at, sizeof v);
  return v;
}

// The IR with its first node's op field set to `code` (kiln/ir.h's layout:
// a 32-byte header, then each value's 16 bytes and 8 per dim).
std::vector<uint8_t> with_op_code(std::vector<uint8_t> ir, uint16_t code) {
  const uint32_t num_values = read_at<uint32_t>(ir, 24);
  size_t at = 32;
  for (uint32_t v = 0; v < num_values; ++v) at += 16 + 8 * static_cast<size_t>(ir.at(at + 1));
  std::memcpy(ir.data() + at, &code, sizeof code);
  return ir;
}

void check_refuses_unknown_ops(const std::string& backend) {
  std::unique_ptr<Device> dev;
  try {
    dev = Registry::instance().open(backend, 0);
  } catch (const Error& e) {
    if (backend == "cpu") FAIL() << "the cpu plugin must always load: " << e.what();
    GTEST_SKIP() << "no " << backend << " device: " << e.what();
  }
  // In the table, but in no kernel dispatch.
  for (kiln_op op : {KILN_OP_SQUARED_RELU, KILN_OP_SQUARED_RELU_GRAD}) {
    SCOPED_TRACE(backend + " / " + kiln_op_name(op));
    ASSERT_FALSE(dev->plugin().supports(op)) << "a backend gained a kernel: pick another op for this test";
    const Refusal r = compile(*dev, one_node(op));
    EXPECT_EQ(r.code, KILN_ERR_UNSUPPORTED) << r.message;
    EXPECT_NE(r.message.find(kiln_op_name(op)), std::string::npos) << r.message;
  }
  // Past the table: the code a newer host's next op would have, and the
  // largest the IR can carry.
  for (int code : {static_cast<int>(KILN_OP_COUNT_), 0xFFFF}) {
    SCOPED_TRACE(backend + " / code " + std::to_string(code));
    const Refusal r = compile(*dev, with_op_code(one_node(KILN_OP_SQUARED_RELU), static_cast<uint16_t>(code)));
    EXPECT_EQ(r.code, KILN_ERR_UNSUPPORTED) << r.message;
    EXPECT_NE(r.message.find(std::to_string(code)), std::string::npos) << r.message;
  }
  // The patch itself is sound: the same IR with the code of GELU (one
  // input, no attributes, like SQUARED_RELU) compiles.
  const Refusal known = compile(*dev, with_op_code(one_node(KILN_OP_SQUARED_RELU), KILN_OP_GELU));
  EXPECT_EQ(known.code, KILN_OK) << known.message;
}

TEST(UnknownOps, CpuRefusesThemAsUnsupported) { check_refuses_unknown_ops("cpu"); }
TEST(UnknownOps, OpenclRefusesThemAsUnsupported) { check_refuses_unknown_ops("opencl"); }
TEST(UnknownOps, VulkanRefusesThemAsUnsupported) { check_refuses_unknown_ops("vulkan"); }

}  // namespace
}  // namespace kiln
