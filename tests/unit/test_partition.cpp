// Partial backends: graph/partition's ordering and cutting, and
// graph::Executable running the ops a backend lacks on the cpu backend.
// The "partial" backend is the cpu plugin behind an in-process wrapper whose
// op_supported denies ops, so a split run must give the same bits as an
// unsplit one; the wrapper also checks that no segment ever receives a
// buffer from the other device.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "core/registry.h"
#include "graph/executor.h"
#include "graph/partition.h"
#include "graph/reference/reference.h"
#include "trainer/model/step_graphs.h"
#include "wrapped_cpu_plugin.h"

namespace kiln::graph {
namespace {

// A partial backend: the example template plugin's elementwise ops (it
// also runs small MATMULs; these tests want the GEMMs on the other side).
bool template_ops(kiln_op op) {
  switch (op) {
    case KILN_OP_FILL:
    case KILN_OP_ADD:
    case KILN_OP_MUL:
    case KILN_OP_SCALE:
    case KILN_OP_GELU:
    case KILN_OP_GELU_GRAD: return true;
    default: return false;
  }
}

std::vector<int> devices_by(const Graph& g, bool (*on_primary)(kiln_op)) {
  std::vector<int> d;
  for (const Node& n : g.nodes()) d.push_back(on_primary(n.op) ? 0 : 1);
  return d;
}

HostTensor uniform(Shape s, uint32_t seed, float lo = -1.0f, float hi = 1.0f) {
  HostTensor t = HostTensor::zeros(KILN_F32, std::move(s));
  uint32_t x = seed * 2654435761u + 1;
  for (float& v : t.f32) {
    x = x * 1664525u + 1013904223u;
    v = lo + (hi - lo) * static_cast<float>(x >> 8) / 16777216.0f;
  }
  return t;
}

// ---------------------------------------------------------------- partition()

TEST(Partition, GroupsIndependentNodesOfOneDevice) {
  Graph g;
  ValueId x = g.input("x", KILN_F32, {4, 4});
  ValueId a = g.gelu(x);         // 0: primary
  ValueId b = g.matmul(a, a);    // 1: fallback
  ValueId c = g.scale(x, 2.0f);  // 2: primary, independent of b
  ValueId d = g.matmul(c, c);    // 3: fallback
  g.output("y", g.add(b, d));    // 4: primary
  auto segs = partition(g, devices_by(g, template_ops));
  ASSERT_EQ(segs.size(), 3u);
  EXPECT_EQ(segs[0].device, 0);
  EXPECT_EQ(segs[0].nodes, (std::vector<int>{0, 2}));
  EXPECT_EQ(segs[1].nodes, (std::vector<int>{1, 3}));
  EXPECT_EQ(segs[2].nodes, (std::vector<int>{4}));
}

TEST(Partition, OneDeviceKeepsTheOriginalOrder) {
  Graph g = trainer::build_train_step(trainer::GptConfig(trainer::ModelArchitecture{1, 16, 2, 11, 5}), 2);
  auto segs = partition(g, std::vector<int>(g.nodes().size(), 0));
  ASSERT_EQ(segs.size(), 1u);
  for (size_t i = 0; i < segs[0].nodes.size(); ++i) EXPECT_EQ(segs[0].nodes[i], static_cast<int>(i));
}

// An in-place write may not overtake a read of the old contents, even when
// the writer (FILL) is ready first and runs on another device.
TEST(Partition, InPlaceWritesWaitForEveryReader) {
  Graph g;
  ValueId grad = g.input("grad", KILN_F32, {8});
  ValueId sq = g.sum_squares(grad);  // 0: fallback reads grad
  g.output("sq", sq);
  g.output("grad.out", g.fill({8}, 0.0f), "grad");  // 1: primary overwrites it
  auto segs = partition(g, devices_by(g, template_ops));
  ASSERT_EQ(segs.size(), 2u);
  EXPECT_EQ(segs[0].nodes, std::vector<int>{0});
  EXPECT_EQ(segs[1].nodes, std::vector<int>{1});
}

// A host alias waits until the current device has nothing ready: it cuts
// the primary's run only where a primary node needs the view.
TEST(Partition, HostAliasesRunOnlyWhereTheCurrentDeviceWaits) {
  Graph g;
  ValueId x = g.input("x", KILN_F32, {4, 4});
  ValueId a = g.scale(x, 2.0f);                 // 0: primary
  ValueId r = g.reshape(a, {16});               // 1: host alias
  ValueId c = g.scale(x, 3.0f);                 // 2: primary, independent of r
  g.output("y", g.add(r, g.reshape(c, {16})));  // 3: alias, 4: primary
  std::vector<int> where = {kPrimaryDevice, kHostAlias, kPrimaryDevice, kHostAlias, kPrimaryDevice};
  auto segs = partition(g, where);
  ASSERT_EQ(segs.size(), 3u);
  EXPECT_EQ(segs[0].nodes, (std::vector<int>{0, 2}));
  EXPECT_EQ(segs[1].device, kHostAlias);
  EXPECT_EQ(segs[1].nodes, (std::vector<int>{1, 3}));
  EXPECT_EQ(segs[2].nodes, std::vector<int>{4});
}

TEST(Partition, SegmentGraphsExposeCrossingValuesAndKeepPortNames) {
  Graph g;
  ValueId x = g.input("x", KILN_F32, {4, 4});
  ValueId m = g.matmul(g.gelu(x), x);
  g.output("y", g.gelu(m));
  auto segs = partition(g, devices_by(g, template_ops));
  auto pieces = extract_segments(g, segs);
  ASSERT_EQ(pieces.size(), 3u);
  EXPECT_EQ(pieces[0].inputs.size(), 1u);
  EXPECT_EQ(pieces[0].inputs[0].first, "x");
  ASSERT_EQ(pieces[1].inputs.size(), 2u);  // gelu(x) crossing, and x itself
  EXPECT_EQ(pieces[1].outputs.size(), 1u);
  EXPECT_TRUE(pieces[1].outputs[0].first.starts_with("%"));
  EXPECT_EQ(pieces[2].outputs[0].first, "y");
}

// ---------------------------------------------------------------- execution

class SplitExecution : public ::testing::Test {
 protected:
  void SetUp() override {
    partial_ = testing::open_wrapped_cpu();
    testing::wrapped_hooks().supported = template_ops;
    cpu_ = Registry::instance().open("cpu", 0, 0);
    fallback_ = std::make_unique<FallbackDevice>(*cpu_);
  }
  void TearDown() override { EXPECT_EQ(testing::wrapped_hooks().violation, ""); }

  // Runs g `runs` times on `device` with `inputs` written once (in-place
  // updates carry over between runs); returns every output of the last run
  // and every input port's final contents.
  TensorMap run(Device& device, const Graph& g, const TensorMap& inputs, int runs, ExecutionSplit* split) {
    Executable exe(device, g, fallback_.get());
    for (const Port& p : g.inputs()) exe.buffer(p.name)->write(inputs.at(p.name).data(), inputs.at(p.name).bytes());
    for (int i = 0; i < runs; ++i) exe.run();
    TensorMap out;
    for (const auto* ports : {&g.inputs(), &g.outputs()})
      for (const Port& p : *ports) {
        HostTensor t = HostTensor::zeros(g.value(p.value).dtype, g.shape(p.value));
        exe.buffer(p.name)->read(t.data(), t.bytes());
        out[p.name] = std::move(t);
      }
    if (split) *split = exe.split();
    return out;
  }

  // The split run must equal the unsplit cpu run bit for bit.
  ExecutionSplit expect_same_as_cpu(const Graph& g, const TensorMap& inputs, int runs = 1) {
    ExecutionSplit split, whole;
    TensorMap got = run(*partial_, g, inputs, runs, &split);
    // The reference compiles the graph whole (graph/compile_units.h), so the
    // split run, cut per layer too, is checked against one piece.
    setenv("KILN_COMPILE_UNITS", "whole", 1);
    TensorMap want = run(*cpu_, g, inputs, runs, &whole);
    unsetenv("KILN_COMPILE_UNITS");
    EXPECT_EQ(whole.segments, 1);
    EXPECT_EQ(whole.bytes_per_run, 0u);
    for (const auto& [name, t] : want) {
      const HostTensor& s = got.at(name);
      EXPECT_EQ(std::memcmp(t.data(), s.data(), t.bytes()), 0) << "port " << name << " differs after a split run";
    }
    return split;
  }

  std::unique_ptr<Device> partial_, cpu_;
  std::unique_ptr<FallbackDevice> fallback_;  // cpu_, for the ops partial_ lacks
};

TEST_F(SplitExecution, ValuesCrossBothWaysAndOutputsComeFromEitherDevice) {
  Graph g;
  ValueId x = g.input("x", KILN_F32, {17, 33}), w = g.input("w", KILN_F32, {33, 5});
  ValueId b = g.input("b", KILN_F32, {5});
  ValueId h = g.matmul(g.scale(x, 0.5f), w);       // primary -> fallback
  ValueId y = g.gelu(g.add(h, b));                 // fallback -> primary
  g.output("y", y);                                // made on the primary
  g.output("h", h);                                // made on the fallback, also read by the primary
  g.output("s", g.sum_to(y, {5}));                 // fallback again, reads a primary value
  g.output("t", g.sum_squares(g.scale(x, 0.5f)));  // x read on both devices
  TensorMap in{{"x", uniform({17, 33}, 1)}, {"w", uniform({33, 5}, 2)}, {"b", uniform({5}, 3)}};
  ExecutionSplit split = expect_same_as_cpu(g, in);
  EXPECT_EQ(split.fallback, "cpu");
  EXPECT_EQ(split.fallback_ops, (std::vector<kiln_op>{KILN_OP_MATMUL, KILN_OP_SUM_TO, KILN_OP_SUM_SQUARES}));
  EXPECT_GT(split.segments, 1);
  EXPECT_GT(split.bytes_per_run, 0u);
  EXPECT_EQ(split.primary_nodes + split.fallback_nodes, static_cast<int64_t>(g.nodes().size()));

  TensorMap ref = run_reference(g, in);
  ExecutionSplit ignored;
  TensorMap got = run(*partial_, g, in, 1, &ignored);
  for (const char* name : {"y", "h", "s", "t"})
    for (size_t i = 0; i < ref.at(name).f32.size(); ++i)
      EXPECT_NEAR(got.at(name).f32[i], ref.at(name).f32[i], 1e-4) << name << "[" << i << "]";
}

// RESHAPEs the primary lacks are views, not fallback work: the primary
// reads its own results and the input ports under the new shape, with no
// piece or copy for them; a RESHAPE that makes an output port still runs
// on the fallback (the port has a buffer of its own). Copied and shared
// host memory alike give the unsplit run's bits.
TEST_F(SplitExecution, ReshapesThePrimaryLacksAreViewsNotFallbackWork) {
  Graph g;
  ValueId x = g.input("x", KILN_F32, {6, 8}), w = g.input("w", KILN_F32, {8, 3});
  ValueId bias = g.input("bias", KILN_F32, {48});
  ValueId r = g.reshape(g.scale(x, 0.5f), {48});  // primary -> view -> primary
  ValueId c = g.reshape(g.add(r, bias), {6, 8});  // primary -> view -> fallback (matmul)
  ValueId m = g.matmul(c, w);
  g.output("y", g.gelu(m));
  g.output("z", g.add(g.reshape(x, {48}), r));  // a view of an input port
  g.output("v", g.reshape(m, {18}));            // an output port: fallback
  TensorMap in{{"x", uniform({6, 8}, 1)}, {"w", uniform({8, 3}, 2)}, {"bias", uniform({48}, 3)}};
  for (bool host_memory : {false, true}) {
    partial_ = testing::open_wrapped_cpu(0, host_memory);
    testing::wrapped_hooks().supported = template_ops;
    ExecutionSplit split = expect_same_as_cpu(g, in, 2);
    EXPECT_EQ(split.aliases, 3);
    EXPECT_EQ(split.fallback_ops, (std::vector<kiln_op>{KILN_OP_MATMUL, KILN_OP_RESHAPE}));
    EXPECT_EQ(split.fallback_nodes, 2);
  }
}

// AdamW runs on the fallback and updates parameter and moments in place;
// the gradient is zeroed in place on the primary after AdamW has read it.
// Three runs: updated state must carry over between runs on both sides.

// The same split with a primary whose buffers are host memory (ABI 1.5):
// nothing is copied, the fallback works in the primary's buffers, and every
// port is bit for bit what the copying split gives.
TEST_F(SplitExecution, SharesHostMemoryInsteadOfCopyingWithTheSameResults) {
  Graph g;
  ValueId x = g.input("x", KILN_F32, {17, 33}), w = g.input("w", KILN_F32, {33, 5});
  ValueId b = g.input("b", KILN_F32, {5});
  ValueId h = g.matmul(g.scale(x, 0.5f), w);
  ValueId y = g.gelu(g.add(h, b));
  g.output("y", y);
  g.output("h", h);
  g.output("s", g.sum_to(y, {5}));
  g.output("t", g.sum_squares(g.scale(x, 0.5f)));
  TensorMap in{{"x", uniform({17, 33}, 1)}, {"w", uniform({33, 5}, 2)}, {"b", uniform({5}, 3)}};
  ExecutionSplit copied, shared;
  const TensorMap want = run(*partial_, g, in, 2, &copied);
  partial_ = testing::open_wrapped_cpu(0, /*host_memory=*/true);
  testing::wrapped_hooks().supported = template_ops;
  const TensorMap got = run(*partial_, g, in, 2, &shared);
  EXPECT_GT(copied.bytes_per_run, 0u);
  EXPECT_EQ(copied.bytes_shared, 0u);
  EXPECT_EQ(shared.bytes_per_run, 0u);
  EXPECT_GT(shared.bytes_shared, 0u);
  EXPECT_EQ(shared.segments, copied.segments);
  for (const auto& [name, t] : want)
    EXPECT_EQ(std::memcmp(t.data(), got.at(name).data(), t.bytes()), 0) << "port " << name << " differs when shared";
  EXPECT_EQ(testing::wrapped_hooks().violation, "");
}

TEST_F(SplitExecution, InPlaceUpdatesOnEitherDeviceReachThePortBuffers) {
  Graph g;
  ValueId hp = g.input("hparams", KILN_F32, {5});
  ValueId p = g.input("p", KILN_F32, {65}), gr = g.input("grad", KILN_F32, {65});
  ValueId m = g.input("m", KILN_F32, {65}), v = g.input("v", KILN_F32, {65});
  auto out = g.adamw(p, gr, m, v, hp, 0.9f, 0.95f, 1e-8f, true);
  g.output("p.out", out[0], "p");
  g.output("m.out", out[1], "m");
  g.output("v.out", out[2], "v");
  g.output("grad.out", g.fill({65}, 0.0f), "grad");
  HostTensor hparams = HostTensor::zeros(KILN_F32, {5});
  hparams.f32 = {1e-2f, 0.1f, 10.0f, 20.0f, 1.0f};
  TensorMap in{{"hparams", hparams},
               {"p", uniform({65}, 4)},
               {"grad", uniform({65}, 5)},
               {"m", uniform({65}, 6, -0.1f, 0.1f)},
               {"v", uniform({65}, 7, 0.0f, 0.01f)}};
  ExecutionSplit split = expect_same_as_cpu(g, in, 3);
  EXPECT_EQ(split.fallback_ops, std::vector<kiln_op>{KILN_OP_ADAMW});

  // And the first run alone against the reference: state really moved.
  ExecutionSplit ignored;
  TensorMap got = run(*partial_, g, in, 1, &ignored);
  TensorMap ref = run_reference(g, in);
  for (size_t i = 0; i < 65; ++i) {
    EXPECT_NEAR(got.at("p").f32[i], ref.at("p.out").f32[i], 1e-6);
    EXPECT_EQ(got.at("grad").f32[i], 0.0f);
  }
}

// The whole training step of a small GPT, split between the template's ops
// and the cpu: loss and every gradient accumulator, over two micro-batches.
TEST_F(SplitExecution, GptTrainStepMatchesTheUnsplitRun) {
  const trainer::GptConfig cfg(trainer::ModelArchitecture{2, 24, 3, 29, 9});
  Graph g = trainer::build_train_step(cfg, 2);
  TensorMap in;
  uint32_t seed = 10;
  for (const Port& p : g.inputs()) {
    const Value& v = g.value(p.value);
    if (v.dtype == KILN_I32) {
      HostTensor t = HostTensor::zeros(KILN_I32, v.shape);
      for (size_t i = 0; i < t.i32.size(); ++i) t.i32[i] = static_cast<int32_t>((i * 7 + seed) % 29);
      in[p.name] = t;
    } else {
      in[p.name] = uniform(v.shape, ++seed, -0.1f, 0.1f);
    }
  }
  ExecutionSplit split = expect_same_as_cpu(g, in, 2);
  EXPECT_GT(split.primary_nodes, 0);
  EXPECT_GT(split.fallback_nodes, split.primary_nodes);
}

TEST_F(SplitExecution, FullySupportedGraphsAreNotSplit) {
  testing::wrapped_hooks().supported = nullptr;
  Graph g = trainer::build_optimizer_step(trainer::GptConfig(trainer::ModelArchitecture{1, 16, 2, 11, 5}),
                                          trainer::AdamWConfig{});
  // Whole graphs: the optimizer's per-layer compile units are not a split.
  setenv("KILN_COMPILE_UNITS", "whole", 1);
  Executable exe(*partial_, g, fallback_.get());
  unsetenv("KILN_COMPILE_UNITS");
  EXPECT_EQ(exe.split().segments, 1);
  EXPECT_EQ(exe.split().fallback, "");
  EXPECT_EQ(exe.split().fallback_nodes, 0);
}

TEST_F(SplitExecution, BindChecksSizeAndDevice) {
  Graph g;
  g.output("y", g.matmul(g.input("x", KILN_F32, {3, 3}), g.input("w", KILN_F32, {3, 3})));
  Executable exe(*partial_, g, fallback_.get());
  EXPECT_THROW(exe.bind("x", std::make_shared<DeviceBuffer>(*partial_, 8)), Error);
  EXPECT_THROW(exe.bind("x", std::make_shared<DeviceBuffer>(*cpu_, 36)), Error);
  EXPECT_THROW(exe.buffer("nope"), Error);
  exe.bind("x", std::make_shared<DeviceBuffer>(*partial_, 36));
}

}  // namespace
}  // namespace kiln::graph

namespace kiln::graph {
namespace {

// The fallback device comes from the caller; without one, a graph that needs
// it is a one-line error naming the ops the backend lacks.
TEST(SplitExecutionErrors, NoFallbackDeviceNamesTheMissingOps) {
  auto partial = testing::open_wrapped_cpu();
  testing::wrapped_hooks().supported = [](kiln_op op) { return op != KILN_OP_SUM_SQUARES; };
  Graph g;
  g.output("sq", g.sum_squares(g.scale(g.input("x", KILN_F32, {8}), 2.0f)));
  try {
    Executable exe(*partial, g);
    FAIL() << "expected an error: the graph needs a fallback device";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "backend wrapped does not support sum_squares, and this graph was given no fallback device to run them "
              "on");
  }
}

// A split graph is refused for the same reasons as an unsplit one.
TEST(SplitExecutionErrors, InPlaceUpdateReadLaterIsRefused) {
  auto partial = testing::open_wrapped_cpu();
  testing::wrapped_hooks().supported = [](kiln_op op) { return op != KILN_OP_SUM_SQUARES; };
  Graph g;
  ValueId x = g.input("x", KILN_F32, {8});
  g.output("x.out", g.scale(x, 2.0f), "x");
  g.output("sq", g.sum_squares(x));  // reads x after the in-place write
  FallbackDevice fallback;
  EXPECT_THROW(Executable(*partial, g, &fallback), Error);
}

}  // namespace
}  // namespace kiln::graph
