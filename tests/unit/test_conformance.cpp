// The conformance suite itself: it covers every op, its options do what
// they say (batches, repeats, hints, backend cases), and it catches what it
// promises to catch (unsupported ops, wrong values, unwritten outputs,
// writes past the end, modified inputs, runs that differ, invalid inputs
// accepted), using an in-process wrapper of the cpu plugin that misbehaves
// on demand. test_conformance_backends.cpp runs it on every backend.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
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

TEST(Conformance, EveryIdTakingOpHasAnInvalidIdCase) {
  std::set<std::string> refused;
  const Suite suite = Suite::builtin();
  for (const Case& c : suite.cases())
    if (c.expect_error) refused.insert(c.group);
  EXPECT_EQ(refused, (std::set<std::string>{"embedding", "embedding_grad", "cross_entropy", "cross_entropy_grad"}));
}

TEST(Conformance, BatchedRunsMatchCaseByCase) {
  auto device = Registry::instance().open("cpu", 0, 2);
  Options options;
  options.out = nullptr;
  options.filters = {"layernorm", "matmul [3, 17]", "fill"};
  const Suite suite = Suite::builtin();
  const Report alone = run(*device, suite, options);
  options.batch = 5;
  const Report batched = run(*device, suite, options);
  ASSERT_EQ(alone.cases.size(), batched.cases.size());
  ASSERT_GT(alone.cases.size(), 5u);
  for (size_t i = 0; i < alone.cases.size(); ++i) {
    EXPECT_EQ(alone.cases[i].c, batched.cases[i].c);
    EXPECT_EQ(batched.cases[i].status, Status::Pass) << batched.cases[i].c->name << ": " << batched.cases[i].detail;
    // The same kernels on the same inputs: the same bits, so the same NMSE.
    EXPECT_EQ(alone.cases[i].outputs, batched.cases[i].outputs) << alone.cases[i].c->name;
  }
}

TEST(Conformance, ErrorCasesFailWhenTheDeviceAcceptsTheInputs) {
  graph::Graph g;
  g.output("y", g.gelu(g.input("x", KILN_F32, {3})));
  Case c;
  c.group = c.name = "gelu accepted";
  c.graph = g;
  c.inputs["x"] = graph::HostTensor::zeros(KILN_F32, {3});
  c.expect_error = "out of range";
  Suite suite;
  suite.add(c);
  auto device = Registry::instance().open("cpu", 0, 1);
  Options options;
  options.out = nullptr;
  const Report r = run(*device, suite, options);
  ASSERT_EQ(r.cases.size(), 1u);
  EXPECT_EQ(r.cases[0].status, Status::Fail);
  EXPECT_NE(r.cases[0].detail.find("without an error"), std::string::npos) << r.cases[0].detail;
}

TEST(Conformance, BackendCasesJoinOnlyTheirBackend) {
  register_backend_cases("conformance-test-backend", [](Suite& s) {
    graph::Graph g;
    g.output("y", g.scale(g.input("x", KILN_F32, {4}), 2.0f));
    s.add_case("backend only", std::move(g), kTolElementwise);
  });
  const Suite mine = Suite::for_backend("conformance-test-backend");
  EXPECT_EQ(mine.cases().size(), Suite::builtin().cases().size() + 1);
  EXPECT_EQ(mine.cases().back().name, "backend only");
  EXPECT_EQ(Suite::for_backend("cpu").cases().size(), Suite::builtin().cases().size());
}

TEST(Conformance, HintsHoldForTheirScope) {
  unsetenv("KILN_CONFORMANCE_TEST_HINT");
  setenv("KILN_CONFORMANCE_TEST_OLD", "old", 1);
  {
    const ScopedHints hints({"KILN_CONFORMANCE_TEST_HINT=1", "KILN_CONFORMANCE_TEST_OLD=new"});
    EXPECT_STREQ(std::getenv("KILN_CONFORMANCE_TEST_HINT"), "1");
    EXPECT_STREQ(std::getenv("KILN_CONFORMANCE_TEST_OLD"), "new");
  }
  EXPECT_EQ(std::getenv("KILN_CONFORMANCE_TEST_HINT"), nullptr);
  EXPECT_STREQ(std::getenv("KILN_CONFORMANCE_TEST_OLD"), "old");
  unsetenv("KILN_CONFORMANCE_TEST_OLD");
  EXPECT_THROW(ScopedHints({"KILN_CPU_DISABLE_AVX2"}), Error);
}

TEST(Conformance, HostCollectivesAreListedNotRun) {
  for (int op = 0; op < KILN_OP_COUNT_; ++op)
    EXPECT_EQ(is_host_collective(static_cast<kiln_op>(op)), op == KILN_OP_ALL_REDUCE || op == KILN_OP_ALL_GATHER ||
                                                                op == KILN_OP_REDUCE_SCATTER || op == KILN_OP_SCATTER ||
                                                                op == KILN_OP_COPY_TO_TP_REGION)
        << op;

  // A case holding one is refused: no device could run it.
  graph::Graph g;
  g.output("y", g.all_reduce(g.input("x", KILN_F32, {3}), KILN_GROUP_TP));
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
  Report run_filtered(const std::string& filter, bool repeat = false, size_t batch = 1) {
    Options options;
    options.out = nullptr;
    options.filters = {filter};
    options.repeat = repeat;
    options.batch = batch;
    return run(*device_, suite_, options);
  }
  const Suite suite_ = Suite::builtin();  // outlives the reports, which point into it
  std::unique_ptr<Device> device_;
};

TEST_F(FaultyBackend, UnsupportedOpsAreReportedNotFailed) {
  // ERF is a primitive (GELU_ERF, a composite with a kernel here, needs it
  // only for its decomposition, which then does not run without a fallback).
  // (The hook answers for every op: SQUARED_RELU's pair, which the cpu has
  // no kernel for, stays unlisted as the cpu leaves it.)
  testing::wrapped_hooks().supported = [](kiln_op op) {
    return op != KILN_OP_ERF && op != KILN_OP_SQUARED_RELU && op != KILN_OP_SQUARED_RELU_GRAD;
  };
  auto check = [](const Report& r) {
    // The filter is a substring of names: gelu_erf, gelu_erf_grad, erf, and
    // the groups of cases named "overflow".
    std::set<std::string> groups;
    for (const GroupResult& g : r.groups) groups.insert(g.group);
    EXPECT_EQ(groups.count("erf"), 1u);
    EXPECT_EQ(groups.count("gelu_erf"), 1u);
    for (const GroupResult& g : r.groups) {
      SCOPED_TRACE(g.group);
      if (g.group == "erf") {
        EXPECT_EQ(g.status, Status::Unsupported);
        EXPECT_NE(g.detail.find("erf"), std::string::npos) << g.detail;
      } else {
        EXPECT_EQ(g.status, Status::Pass);
      }
    }
    EXPECT_EQ(r.failed(), 0);
  };
  check(run_filtered("erf"));
  // In a batch too: the unsupported cases stay out of the batch's graph.
  check(run_filtered("erf", false, 0));
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

TEST_F(FaultyBackend, OverrunSizeIsTheWholeWrite) {
  // One float just past the output: 4 bytes, the first of which (1.0f is
  // 00 00 80 3f) differs from the guard pattern like the rest.
  testing::wrapped_hooks().after_execute = [](const kiln_plugin_api* api, kiln_execute_args* a, auto& sizes) {
    const float one = 1.0f;
    kiln_buffer_transfer_args t{};
    t.struct_size = sizeof(t);
    t.device = a->device;
    t.buffer = a->slots[a->num_slots - 1];
    t.offset = sizes.back() - 256;  // the runner's guard is 256 bytes
    t.size_bytes = sizeof(one);
    t.host = const_cast<float*>(&one);
    api->buffer_write(&t);
  };
  Report r = run_filtered("gelu_grad [33, 65]");
  ASSERT_GE(r.cases.size(), 1u);
  EXPECT_EQ(r.cases[0].status, Status::Fail);
  EXPECT_NE(r.cases[0].detail.find("wrote 4 bytes past its end"), std::string::npos) << r.cases[0].detail;
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

TEST_F(FaultyBackend, RunsThatDifferFailWithRepeat) {
  // Every second execute leaves one element off by a little: within the
  // NMSE threshold, so only the repeat can see it.
  static int executes;
  executes = 0;
  testing::wrapped_hooks().after_execute = [](const kiln_plugin_api* api, kiln_execute_args* a, auto&) {
    if (executes++ % 2 == 0) return;
    kiln_buffer_transfer_args t{};
    t.struct_size = sizeof(t);
    t.device = a->device;
    t.buffer = a->slots[a->num_slots - 1];
    float v = 0;
    t.size_bytes = 4;
    t.host = &v;
    api->buffer_read(&t);
    v = std::nextafter(v, 10.0f);
    api->buffer_write(&t);
  };
  Report once = run_filtered("gelu [127, 129]");
  ASSERT_EQ(once.cases.size(), 1u);
  EXPECT_EQ(once.cases[0].status, Status::Pass) << once.cases[0].detail;
  executes = 0;
  Report twice = run_filtered("gelu [127, 129]", true);
  ASSERT_EQ(twice.cases.size(), 1u);
  EXPECT_EQ(twice.cases[0].status, Status::Fail);
  EXPECT_NE(twice.cases[0].detail.find("bitwise"), std::string::npos) << twice.cases[0].detail;
}

}  // namespace
}  // namespace kiln::conformance
