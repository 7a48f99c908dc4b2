// Compile units (graph/compile_units.h): a step graph is cut per layer, the
// layers' pieces share cache keys, and the number of distinct pieces does
// not grow with the number of layers.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <cstdint>
#include <string>
#include <vector>

#include "compiler_cache/compile_cache.h"
#include "core/registry.h"
#include "graph/compile_units.h"
#include "graph/executor.h"
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

// Compile units of the train step, by cache key: how many pieces have each key.
std::map<std::string, int> units_by_key(int64_t layers) {
  std::unique_ptr<Device> cpu = Registry::instance().open("cpu", 0, 1);
  compiler_cache::Extraction extraction;
  Executable step(*cpu, trainer::build_train_step(model(layers), 2), nullptr, &extraction);
  std::map<std::string, int> count;
  for (const auto& task : extraction.tasks()) ++count[task.key];
  return count;
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
  // One key for both layers' forwards, one for both backwards.
  EXPECT_EQ(shared, 2);
}

TEST(CompileUnits, UniqueUnitsDoNotGrowWithLayers) {
  const std::map<std::string, int> two = units_by_key(2), six = units_by_key(6);
  EXPECT_EQ(two.size(), six.size());
  int units_two = 0, units_six = 0;
  for (const auto& [key, n] : two) units_two += n;
  for (const auto& [key, n] : six) units_six += n;
  EXPECT_EQ(units_six - units_two, 2 * (6 - 2));  // a forward and a backward per added layer
  // The layers' units are the same pieces at any depth (the rest, which
  // holds every parameter's gradient sum, differs with the parameter count).
  for (const auto& [key, n] : two) {
    if (n != 2) continue;
    ASSERT_TRUE(six.count(key)) << "a layer unit of the 2-layer step is missing from the 6-layer step";
    EXPECT_EQ(six.at(key), 6);
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

}  // namespace
}  // namespace kiln::graph
