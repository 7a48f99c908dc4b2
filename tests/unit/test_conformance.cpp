// The conformance suite itself: it covers every op, the cpu plugin passes
// it, and it catches what it promises to catch (unsupported ops, wrong
// values, unwritten outputs, writes past the end, modified inputs), using an
// in-process wrapper of the cpu plugin that misbehaves on demand.
#include <gtest/gtest.h>

#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "core/registry.h"
#include "graph/conformance/runner.h"
#include "wrapped_cpu_plugin.h"

namespace kiln::conformance {
namespace {

TEST(Conformance, BuiltinSuiteCoversEveryOp) {
  Suite suite = Suite::builtin();
  std::set<std::string> groups;
  for (const Case& c : suite.cases()) groups.insert(c.group);
  for (int op = 0; op < KILN_OP_COUNT_; ++op) {
    const std::string name = graph::op_name(static_cast<kiln_op>(op));
    if (is_host_collective(static_cast<kiln_op>(op))) {
      // Never run by a plugin: no case (HostCollectivesAreListedNotRun).
      EXPECT_FALSE(groups.count(name)) << name << " is a host collective but has conformance cases";
      continue;
    }
    EXPECT_TRUE(groups.count(name)) << "no conformance case for op " << name;
    bool in_graph = false;
    for (const Case& c : suite.cases())
      if (c.group == name)
        for (const graph::Node& n : c.graph.nodes()) in_graph = in_graph || n.op == op;
    EXPECT_TRUE(in_graph) << "the " << name << " cases do not use " << name;
  }
}

TEST(Conformance, MatmulCoversEveryTransposeAndBatching) {
  std::set<std::string> seen;
  const Suite suite = Suite::builtin();
  for (const Case& c : suite.cases()) {
    if (c.group != "matmul") continue;
    const graph::Node& n = c.graph.nodes().at(0);
    const bool batched = c.graph.shape(n.inputs[0]).size() > 2;
    seen.insert(std::to_string(n.iattrs[0]) + std::to_string(n.iattrs[1]) + (batched ? "b" : ""));
  }
  EXPECT_EQ(seen, (std::set<std::string>{"00", "01", "10", "11", "00b", "01b", "10b", "11b"}));
}

TEST(Conformance, CpuPassesEveryCase) {
  auto device = Registry::instance().open("cpu", 0, 2);
  Options options;
  options.out = nullptr;
  Report report = run(*device, Suite::builtin(), options);
  EXPECT_EQ(report.failed(), 0);
  EXPECT_EQ(report.unsupported(), 0);
  EXPECT_EQ(report.host_collectives, std::vector<kiln_op>{KILN_OP_ALL_REDUCE});
  for (const CaseResult& r : report.cases) EXPECT_EQ(r.status, Status::Pass) << r.c->name << ": " << r.detail;
}

TEST(Conformance, HostCollectivesAreListedNotRun) {
  for (int op = 0; op < KILN_OP_COUNT_; ++op)
    EXPECT_EQ(is_host_collective(static_cast<kiln_op>(op)), op == KILN_OP_ALL_REDUCE) << op;

  // A case holding one is refused: no device could run it.
  graph::Graph g;
  g.output("y", g.all_reduce(g.input("x", KILN_F32, {3})));
  Suite suite;
  EXPECT_THROW(suite.add_case("tp", g, kTolElementwise), Error);

  // The report names it, apart from passes, failures and unsupported ops.
  auto device = Registry::instance().open("cpu", 0, 1);
  Options options;
  options.out = std::tmpfile();
  ASSERT_NE(options.out, nullptr);
  options.filters = {"all_reduce", "row_max [1, 1]"};
  Report report = run(*device, Suite::builtin(), options);
  EXPECT_EQ(report.host_collectives, std::vector<kiln_op>{KILN_OP_ALL_REDUCE});
  ASSERT_EQ(report.groups.size(), 1u);  // row_max only
  EXPECT_EQ(report.passed(), 1);
  EXPECT_EQ(report.unsupported(), 0);
  std::string text(4096, '\0');
  std::rewind(options.out);
  text.resize(std::fread(text.data(), 1, text.size(), options.out));
  std::fclose(options.out);
  EXPECT_NE(text.find("all_reduce"), std::string::npos) << text;
  EXPECT_NE(text.find("host collective"), std::string::npos) << text;

  options.out = nullptr;
  options.filters = {"gelu"};
  EXPECT_TRUE(run(*device, Suite::builtin(), options).host_collectives.empty());
}

TEST(Conformance, AddCaseFillsFloatInputsAndNeedsIds) {
  Suite suite;
  graph::Graph g;
  g.output("y", g.gelu(g.input("x", KILN_F32, {5})));
  suite.add_case("model", g, kTolElementwise);
  ASSERT_EQ(suite.cases().size(), 1u);
  EXPECT_EQ(suite.cases()[0].inputs.at("x").f32.size(), 5u);
  EXPECT_TRUE(suite.cases()[0].fallback);
  EXPECT_THROW(suite.add_case("model", g, kTolElementwise), Error);  // duplicate name

  graph::Graph e;
  e.output("y", e.embedding(e.input("t", KILN_F32, {4, 2}), e.input("ids", KILN_I32, {3})));
  EXPECT_THROW(suite.add_case("ids", e, kTolElementwise), Error);
}

class FaultyBackend : public ::testing::Test {
 protected:
  void SetUp() override { device_ = testing::open_wrapped_cpu(2); }
  void TearDown() override { EXPECT_EQ(testing::wrapped_hooks().violation, ""); }

  // Runs the cases whose names contain `filter`; returns their results.
  Report run_filtered(const std::string& filter) {
    Options options;
    options.out = nullptr;
    options.filters = {filter};
    return run(*device_, Suite::builtin(), options);
  }
  std::unique_ptr<Device> device_;
};

TEST_F(FaultyBackend, UnsupportedOpsAreReportedNotFailed) {
  testing::wrapped_hooks().supported = [](kiln_op op) { return op != KILN_OP_GELU; };
  Report r = run_filtered("gelu");
  ASSERT_EQ(r.groups.size(), 2u);  // gelu, gelu_grad
  EXPECT_EQ(r.groups[0].group, "gelu");
  EXPECT_EQ(r.groups[0].status, Status::Unsupported);
  EXPECT_NE(r.groups[0].detail.find("gelu"), std::string::npos) << r.groups[0].detail;
  EXPECT_EQ(r.groups[1].status, Status::Pass);
  EXPECT_EQ(r.failed(), 0);
}

TEST_F(FaultyBackend, WrongValuesFail) {
  // Perturbs the first element of the last slot (the output of a one-op graph).
  testing::wrapped_hooks().after_execute = [](const kiln_plugin_api* api, kiln_execute_args* a, auto&) {
    kiln_buffer_transfer_args t{};
    t.struct_size = sizeof(t);
    t.device = a->device;
    t.buffer = a->slots[a->num_slots - 1];
    float v = 0;
    t.size_bytes = 4;
    t.host = &v;
    api->buffer_read(&t);
    v = v * 1.01f + 0.5f;
    api->buffer_write(&t);
  };
  Report r = run_filtered("gelu [127, 129]");
  ASSERT_EQ(r.cases.size(), 1u);
  EXPECT_EQ(r.cases[0].status, Status::Fail);
  EXPECT_GT(r.cases[0].nmse, kTolElementwise);
  EXPECT_NE(r.cases[0].detail.find("NMSE"), std::string::npos) << r.cases[0].detail;
  EXPECT_EQ(r.failed(), 1);
}

TEST_F(FaultyBackend, UnwrittenOutputsFail) {
  // Refills the output with what the runner put there (NaN): as if never written.
  testing::wrapped_hooks().after_execute = [](const kiln_plugin_api* api, kiln_execute_args* a, auto& sizes) {
    std::vector<uint8_t> nan(4 * 17, 0xFF);
    kiln_buffer_transfer_args t{};
    t.struct_size = sizeof(t);
    t.device = a->device;
    t.buffer = a->slots[a->num_slots - 1];
    t.size_bytes = std::min<uint64_t>(nan.size(), sizes.back());
    t.host = nan.data();
    api->buffer_write(&t);
  };
  Report r = run_filtered("scale [17]");
  ASSERT_EQ(r.cases.size(), 1u);
  EXPECT_EQ(r.cases[0].status, Status::Fail);
  EXPECT_NE(r.cases[0].detail.find("non-finite"), std::string::npos) << r.cases[0].detail;
}

TEST_F(FaultyBackend, WritesPastTheEndFail) {
  // One byte into the guard: the last byte of the output's buffer.
  testing::wrapped_hooks().after_execute = [](const kiln_plugin_api* api, kiln_execute_args* a, auto& sizes) {
    uint8_t x = 0;
    kiln_buffer_transfer_args t{};
    t.struct_size = sizeof(t);
    t.device = a->device;
    t.buffer = a->slots[a->num_slots - 1];
    t.offset = sizes.back() - 1;
    t.size_bytes = 1;
    t.host = &x;
    api->buffer_write(&t);
  };
  Report r = run_filtered("gelu_grad [33, 65]");
  ASSERT_GE(r.cases.size(), 1u);
  EXPECT_EQ(r.cases[0].status, Status::Fail);
  EXPECT_NE(r.cases[0].detail.find("guard"), std::string::npos) << r.cases[0].detail;
}

TEST_F(FaultyBackend, ModifiedInputsFail) {
  testing::wrapped_hooks().after_execute = [](const kiln_plugin_api* api, kiln_execute_args* a, auto&) {
    float x = 42.0f;
    kiln_buffer_transfer_args t{};
    t.struct_size = sizeof(t);
    t.device = a->device;
    t.buffer = a->slots[1];
    t.size_bytes = 4;
    t.host = &x;
    api->buffer_write(&t);
  };
  Report r = run_filtered("gelu [17]");
  ASSERT_EQ(r.cases.size(), 1u);
  EXPECT_EQ(r.cases[0].status, Status::Fail);
  EXPECT_NE(r.cases[0].detail.find("modified"), std::string::npos) << r.cases[0].detail;
}

}  // namespace
}  // namespace kiln::conformance
