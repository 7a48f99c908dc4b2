// Compile units (graph/compile_units.h): a step graph is cut per layer, the
// layers' pieces share cache keys, and the number of distinct pieces does
// not grow with the number of layers.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "compiler_cache/compile_cache.h"
#include "core/registry.h"
#include "graph/compile_units.h"
#include "graph/executor.h"
#include "graph/reference/reference.h"
#include "trainer/model/step_graphs.h"

namespace kiln::graph {
namespace {

trainer::GptConfig model(int64_t layers) {
  trainer::GptConfig c;
  c.num_layers = layers;
  c.hidden_size = 32;
  c.num_attention_heads = 4;
  c.seq_length = 8;
  c.vocab_size = 64;
  return c;
}

// Compile units of a graph, by cache key: how many pieces have each key.
std::map<std::string, int> keys_of(const Graph& g) {
  std::unique_ptr<Device> cpu = Registry::instance().open("cpu", 0, 1);
  compiler_cache::Extraction extraction;
  Executable exe(*cpu, g, nullptr, &extraction);
  std::map<std::string, int> count;
  for (const auto& task : extraction.tasks()) ++count[task.key];
  return count;
}

// The train step's units (a later micro-batch's: it adds to the gradients).
std::map<std::string, int> units_by_key(int64_t layers) { return keys_of(trainer::build_train_step(model(layers), 2)); }

// How many keys occur exactly `times` times.
int keys_seen(const std::map<std::string, int>& count, int times) {
  int n = 0;
  for (const auto& [key, k] : count) n += k == times ? 1 : 0;
  return n;
}

// Sets KILN_COMPILE_UNITS for one test and restores it after.
struct UnitsMode {
  explicit UnitsMode(const char* mode) { setenv("KILN_COMPILE_UNITS", mode, 1); }
  ~UnitsMode() { unsetenv("KILN_COMPILE_UNITS"); }
  UnitsMode(const UnitsMode&) = delete;
  UnitsMode& operator=(const UnitsMode&) = delete;
};

TEST(CompileUnits, TwoLayersForwardAndBackwardShareKeys) {
  const std::map<std::string, int> count = units_by_key(2);
  int shared = 0;
  for (const auto& [key, n] : count)
    if (n == 2) ++shared;
  // One key for both layers' forwards, one for both backwards (whose
  // gradient sums run inside them: graph::place_after_producers).
  EXPECT_EQ(shared, 2);
}

TEST(CompileUnits, UniqueUnitsDoNotGrowWithLayers) {
  const std::map<std::string, int> two = units_by_key(2), six = units_by_key(6);
  EXPECT_EQ(two.size(), six.size());
  int units_two = 0, units_six = 0;
  for (const auto& [key, n] : two) units_two += n;
  for (const auto& [key, n] : six) units_six += n;
  // A forward and a backward (with its gradient sums) per added layer.
  EXPECT_EQ(units_six - units_two, 2 * (6 - 2));
  // Every unit is the same piece at any depth: the layers' (forward,
  // backward) and the rest's, whose gradient sums hold only the rest's own
  // parameters.
  for (const auto& [key, n] : two) {
    ASSERT_TRUE(six.count(key)) << "a unit of the 2-layer step is missing from the 6-layer step";
    EXPECT_EQ(six.at(key), n == 2 ? 6 : n);
  }
}

TEST(CompileUnits, OptimizerUnitsAreSharedAcrossLayers) {
  const trainer::AdamWConfig adam;
  const std::map<std::string, int> two = keys_of(trainer::build_optimizer_step(model(2), adam));
  const std::map<std::string, int> six = keys_of(trainer::build_optimizer_step(model(6), adam));
  // One key for every layer's AdamW updates, plus the rest's.
  EXPECT_EQ(keys_seen(two, 2), 1);
  EXPECT_EQ(keys_seen(six, 6), 1);
  EXPECT_EQ(two.size(), six.size());
  for (const auto& [key, n] : two) {
    ASSERT_TRUE(six.count(key)) << "an optimizer unit of the 2-layer model is missing from the 6-layer one";
    EXPECT_EQ(six.at(key), n == 2 ? 6 : n);
  }
  // The distributed optimizer's parts too.
  EXPECT_EQ(keys_seen(keys_of(trainer::build_sharded_optimizer_step(model(6), adam, 2)), 6), 1);
}

TEST(CompileUnits, GradNormUnitsAreSharedAcrossLayers) {
  const std::map<std::string, int> two = keys_of(trainer::build_grad_norm(model(2)));
  const std::map<std::string, int> six = keys_of(trainer::build_grad_norm(model(6)));
  EXPECT_EQ(keys_seen(two, 2), 1);
  EXPECT_EQ(keys_seen(six, 6), 1);
  // Only the final join of the layers' squares sees the depth.
  EXPECT_EQ(two.size(), six.size());
}

// Runs g once on cpu from deterministic inputs in [0, 0.1) (token ids below
// 29); every port's contents after the run, and the number of pieces run.
std::map<std::string, HostTensor> run_once(const Graph& g, int64_t* pieces) {
  std::unique_ptr<Device> cpu = Registry::instance().open("cpu", 0, 1);
  Executable exe(*cpu, g, nullptr);
  uint32_t x = 12345;
  auto next = [&x] { return (x = x * 1664525u + 1013904223u) >> 8; };
  for (const Port& p : g.inputs()) {
    HostTensor t = HostTensor::zeros(g.value(p.value).dtype, g.shape(p.value));
    for (float& v : t.f32) v = 0.1f * static_cast<float>(next()) / 16777216.0f;
    for (int32_t& v : t.i32) v = static_cast<int32_t>(next() % 29);
    exe.buffer(p.name)->write(t.data(), t.bytes());
  }
  exe.run();
  std::map<std::string, HostTensor> out;
  for (const auto* ports : {&g.inputs(), &g.outputs()})
    for (const Port& p : *ports) {
      HostTensor t = HostTensor::zeros(g.value(p.value).dtype, g.shape(p.value));
      exe.buffer(p.name)->read(t.data(), t.bytes());
      out[p.name] = std::move(t);
    }
  *pieces = exe.split().segments;
  return out;
}

// The per-layer units of the train step, optimizer and grad norm give the
// same bits as the whole graphs: labelling changes where the host cuts,
// never what is computed.
TEST(CompileUnits, UnitsComputeTheSameBitsAsWholeGraphs) {
  const trainer::GptConfig cfg = model(3);
  for (const Graph& g : {trainer::build_train_step(cfg, 2), trainer::build_optimizer_step(cfg, trainer::AdamWConfig{}),
                         trainer::build_grad_norm(cfg)}) {
    int64_t cut = 0, whole_pieces = 0;
    const std::map<std::string, HostTensor> units = run_once(g, &cut);
    std::map<std::string, HostTensor> whole;
    {
      UnitsMode mode("whole");
      whole = run_once(g, &whole_pieces);
    }
    EXPECT_GT(cut, 3);
    EXPECT_EQ(whole_pieces, 1);
    for (const auto& [name, t] : whole)
      EXPECT_EQ(std::memcmp(t.data(), units.at(name).data(), t.bytes()), 0) << "port " << name << " differs";
  }
}

TEST(CompileUnits, WholeGraphModeCompilesOnePiece) {
  UnitsMode whole("whole");
  EXPECT_EQ(units_by_key(4).size(), 1u);
}

TEST(CompileUnits, AnUnknownModeIsAOneLineError) {
  UnitsMode bad("per-op");
  try {
    units_by_key(2);
    ADD_FAILURE() << "an unknown KILN_COMPILE_UNITS must throw";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "KILN_COMPILE_UNITS='per-op' is not a compile-unit mode; use 'layers' (the default) or 'whole'");
  }
}

TEST(CompileUnits, APluginAskingForWholeGraphsGetsThem) {
  kiln_device_properties props{};
  props.struct_size = sizeof(props);
  EXPECT_TRUE(cut_into_units(props));
  props.whole_graph_units = 1;
  EXPECT_FALSE(cut_into_units(props));
  // An older plugin's struct ends before the field: units.
  props.struct_size = offsetof(kiln_device_properties, whole_graph_units);
  EXPECT_TRUE(cut_into_units(props));
}

TEST(CompileUnits, CutsFollowLabelsInRunOrder) {
  Graph g;
  ValueId x = g.input("x", KILN_F32, {4});
  g.set_unit(layer_forward_unit(0));
  ValueId y = g.add(x, x);
  g.set_unit(layer_forward_unit(1));
  ValueId z = g.add(y, y);
  g.set_unit(kRestUnit);
  g.output("z", g.add(z, z));
  const std::vector<Segment> cut = cut_at_units(g, {Segment{kPrimaryDevice, {0, 1, 2}}});
  ASSERT_EQ(cut.size(), 3u);
  for (size_t s = 0; s < cut.size(); ++s) EXPECT_EQ(cut[s].nodes, std::vector<int>{static_cast<int>(s)});
  EXPECT_EQ(backward_unit(layer_forward_unit(3)), -4);
  EXPECT_EQ(backward_unit(kRestUnit), kRestUnit);
}

TEST(CompileUnits, ParametersBelongToTheirLayer) {
  EXPECT_EQ(parameter_layer("decoder.layers.12.mlp.linear_fc1.weight"), 12);
  EXPECT_EQ(parameter_layer("decoder.layers.0.input_layernorm.weight"), 0);
  EXPECT_EQ(parameter_layer("decoder.final_layernorm.weight"), -1);
  EXPECT_EQ(parameter_layer("embedding.word_embeddings.weight"), -1);
  EXPECT_EQ(parameter_layer("decoder.layers.x.weight"), -1);
  EXPECT_EQ(parameter_layer("decoder.layers.3"), -1);
  EXPECT_NE(layer_parameter_unit(0), layer_forward_unit(0));
  EXPECT_NE(layer_parameter_unit(0), layer_parameter_unit(1));
}

// --overlap-grad-reduce's signal: after each piece but the last, the
// outputs no later piece writes, each once. With per-layer units the last
// layer's gradients are final before the first layer's (backward runs from
// the top), in the first micro-batch's step and in the later ones' (whose
// gradient sums are per layer too); a whole graph is one piece, so nothing is
// final before its end.
TEST(CompileUnits, OutputsAreReportedFinalAfterTheirLastPiece) {
  for (const char* mode : {"layers", "whole"}) {
    for (trainer::GradMode grads : {trainer::GradMode::Overwrite, trainer::GradMode::Accumulate}) {
      UnitsMode units(mode);
      std::unique_ptr<Device> cpu = Registry::instance().open("cpu", 0, 1);
      Executable step(*cpu, trainer::build_train_step(model(2), 2, grads));
      for (const Port& p : step.graph().inputs()) {  // zeros: valid token ids, finite values
        const std::shared_ptr<DeviceBuffer> b = step.buffer(p.name);
        const std::vector<uint8_t> zeros(b->size(), 0);
        b->write(zeros.data(), zeros.size());
      }
      std::vector<std::vector<std::string>> reports;
      step.run([&](const std::vector<std::string>& ports) { reports.push_back(ports); });
      if (std::string(mode) == "whole") {
        EXPECT_TRUE(reports.empty());
        continue;
      }
      std::map<std::string, size_t> report_of;
      for (size_t r = 0; r < reports.size(); ++r)
        for (const std::string& p : reports[r]) EXPECT_TRUE(report_of.emplace(p, r).second) << p << " twice";
      const std::string top = trainer::grad_name("decoder.layers.1.mlp.linear_fc2.weight"),
                        bottom = trainer::grad_name("decoder.layers.0.mlp.linear_fc2.weight");
      ASSERT_TRUE(report_of.count(top) && report_of.count(bottom));
      EXPECT_LT(report_of[top], report_of[bottom]);
    }
  }
}

// --overlap-param-gather writes each parameter only when the first piece
// that reads it is about to run. Every input is reported once, layer 0's
// weights before layer 1's, and a run whose parameters hold NaN until their
// report gives the same loss, bit for bit, as one written in full before.
TEST(CompileUnits, InputsAreReportedBeforeTheirFirstPiece) {
  for (const char* mode : {"layers", "whole"}) {
    UnitsMode units(mode);
    std::unique_ptr<Device> cpu = Registry::instance().open("cpu", 0, 1);
    const Graph g = trainer::build_train_step(model(2), 2, trainer::GradMode::Overwrite);
    std::map<std::string, std::vector<uint8_t>> values;  // each input's bytes: small, finite, valid token ids
    for (const Port& p : g.inputs()) {
      std::vector<uint8_t>& v = values[p.name];
      v.resize(static_cast<size_t>(numel(g.value(p.value).shape)) * kiln_dtype_size(g.value(p.value).dtype));
      if (g.value(p.value).dtype == KILN_F32) {
        std::vector<float> f(v.size() / 4);
        for (size_t i = 0; i < f.size(); ++i) f[i] = 0.01f * static_cast<float>((i * 7 + p.name.size()) % 13) - 0.05f;
        std::memcpy(v.data(), f.data(), v.size());
      }
    }
    auto loss_of = [&](Executable& exe) {
      float loss = 0;
      exe.buffer("loss")->read(&loss, sizeof loss);
      return loss;
    };
    Executable upfront(*cpu, g);
    for (const auto& [name, v] : values) upfront.buffer(name)->write(v.data(), v.size());
    upfront.run();

    Executable late(*cpu, g);
    std::map<std::string, size_t> report_of;
    size_t reports = 0;
    for (const auto& [name, v] : values) {
      const bool param = g.value(g.find_input(name)->value).dtype == KILN_F32;
      if (!param) {
        late.buffer(name)->write(v.data(), v.size());
        continue;
      }
      const std::vector<float> nan(v.size() / 4, std::numeric_limits<float>::quiet_NaN());
      late.buffer(name)->write(nan.data(), v.size());
    }
    late.run(nullptr, [&](const std::vector<std::string>& ports) {
      for (const std::string& port : ports) {
        EXPECT_TRUE(report_of.emplace(port, reports).second) << port << " reported twice";
        const std::vector<uint8_t>& v = values.at(port);
        late.buffer(port)->write(v.data(), v.size());
      }
      ++reports;
    });
    EXPECT_EQ(report_of.size(), values.size()) << mode;
    EXPECT_EQ(loss_of(late), loss_of(upfront)) << mode;
    EXPECT_TRUE(std::isfinite(loss_of(upfront)));
    if (std::string(mode) == "whole") {
      EXPECT_EQ(reports, 1u);
      continue;
    }
    const std::string first = "decoder.layers.0.mlp.linear_fc2.weight",
                      second = "decoder.layers.1.mlp.linear_fc2.weight";
    ASSERT_TRUE(report_of.count(first) && report_of.count(second));
    EXPECT_LT(report_of[first], report_of[second]);
  }
}

}  // namespace
}  // namespace kiln::graph
