// Every plugin's support list against the op table (kiln/ops.h), op by op:
// a host collective is never supported, the cpu plugin (the fallback for
// everything) supports every other op but the composites, and op_supported
// agrees with compile.
// An op a plugin claims compiles in a small valid graph (the conformance
// suite's built-in case for it); an op it does not claim is refused as
// KILN_ERR_UNSUPPORTED, never as a malformed graph, so the host can run it on
// the cpu fallback. The ops come from the table, so a new op is checked on
// every plugin without an edit here.
#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "core/backend.h"
#include "core/error.h"
#include "core/registry.h"
#include "graph/conformance/suite.h"
#include "graph/decompose.h"
#include "graph/graph.h"
#include "graph/memory_plan.h"
#include "graph/serialize.h"
#include "kiln/ops.h"

namespace kiln {
namespace {

// The device of `backend`, or nullptr with the reason in `why` (the plugin
// was not built, or this machine has no such device).
std::unique_ptr<Device> open_device(const std::string& backend, std::string* why) {
  try {
    return Registry::instance().open(backend, 0);
  } catch (const Error& e) {
    *why = e.what();
    return nullptr;
  }
}

bool claims(const kiln_plugin_api* api, int op) {
  kiln_op_supported_args a{};
  a.struct_size = sizeof(a);
  a.op = op;
  kiln_error* err = api->op_supported(&a);
  if (err != nullptr) {
    ADD_FAILURE() << "op_supported(" << kiln_op_name(op) << "): " << api->error_message(err);
    api->error_destroy(err);
    return false;
  }
  return a.supported != 0;
}

std::set<kiln_op> ops_of(const graph::Graph& g) {
  std::set<kiln_op> ops;
  for (const graph::Node& n : g.nodes()) ops.insert(n.op);
  return ops;
}

// Compiles `g` on the device; the error code (KILN_OK on success) and message.
int32_t compile(const Device& dev, const graph::Graph& g, std::string* message) {
  const std::vector<uint8_t> ir = graph::serialize(g, graph::plan_memory(g));
  const kiln_plugin_api* api = dev.plugin().raw_table();
  kiln_compile_args c{};
  c.struct_size = sizeof(c);
  c.device_index = 0;
  c.ir = ir.data();
  c.ir_size = ir.size();
  kiln_error* err = api->compile(&c);
  if (err == nullptr) {
    api->executable_bytes_free(c.executable);
    return KILN_OK;
  }
  const int32_t code = api->error_code(err);
  *message = api->error_message(err);
  api->error_destroy(err);
  return code;
}

// The built-in conformance cases (one or more per op), built once.
const conformance::Suite& suite() {
  static const conformance::Suite s = conformance::Suite::builtin();
  return s;
}

// A conformance case that holds `op` and, when `within` is given, only ops
// in it (so that compiling it tests `op` alone); nullptr if there is none.
const graph::Graph* graph_with(kiln_op op, const std::set<kiln_op>* within) {
  for (const conformance::Case& c : suite().cases()) {
    const std::set<kiln_op> ops = ops_of(c.graph);
    if (ops.count(op) == 0) continue;
    bool inside = true;
    if (within)
      for (kiln_op o : ops) inside = inside && within->count(o) > 0;
    if (inside) return &c.graph;
  }
  return nullptr;
}

void check_support_list(const std::string& backend) {
  std::string why;
  std::unique_ptr<Device> dev = open_device(backend, &why);
  if (!dev) {
    if (backend == "cpu") {
      FAIL() << "the cpu plugin must always load: " << why;
    }
    GTEST_SKIP() << "no " << backend << " device (plugin not built or no driver): " << why;
  }
  const kiln_plugin_api* api = dev->plugin().raw_table();
  std::set<kiln_op> claimed;
  for (const kiln_op_info& info : kiln_op_table)
    if (claims(api, info.code)) claimed.insert(info.code);

  for (const kiln_op_info& info : kiln_op_table) {
    SCOPED_TRACE(backend + " / " + info.name);
    const bool collective = (info.properties & KILN_OPP_HOST_COLLECTIVE) != 0;
    if (collective) {
      // The host runs it between compiled pieces; the suite has no case.
      EXPECT_EQ(claimed.count(info.code), 0u) << "a host collective is never in a support list";
      continue;
    }
    // A composite the cpu does not list runs as its decomposition, which
    // the host expands before anything falls back: no backend needs it.
    if (backend == "cpu" && !graph::is_composite(info.code)) {
      EXPECT_EQ(claimed.count(info.code), 1u) << "the cpu fallback must run every device op";
    }
    std::string message;
    if (claimed.count(info.code)) {
      const graph::Graph* g = graph_with(info.code, &claimed);
      ASSERT_NE(g, nullptr) << "no conformance case holds " << info.name << " with only claimed ops";
      EXPECT_EQ(compile(*dev, *g, &message), KILN_OK) << message;
    } else {
      const graph::Graph* g = graph_with(info.code, nullptr);
      ASSERT_NE(g, nullptr) << "no conformance case holds " << info.name;
      EXPECT_EQ(compile(*dev, *g, &message), KILN_ERR_UNSUPPORTED) << message;
      EXPECT_NE(message.find("is not supported by the " + backend + " backend"), std::string::npos) << message;
    }
  }
  // An op code past the table (a newer host's op) is not claimed either.
  EXPECT_FALSE(claims(api, KILN_OP_COUNT_));
  EXPECT_FALSE(claims(api, -1));
}

TEST(SupportLists, Cpu) { check_support_list("cpu"); }
TEST(SupportLists, Opencl) { check_support_list("opencl"); }
TEST(SupportLists, Vulkan) { check_support_list("vulkan"); }

}  // namespace
}  // namespace kiln
