// graph::RunProfile (kiln train --profile): what graph::Executable records
// while a profile is active, on a graph split between a partial backend
// (the cpu plugin behind a wrapper that denies MATMUL, as test_partition's)
// and the cpu fallback, and that nothing is recorded otherwise.
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "core/registry.h"
#include "graph/executor.h"
#include "graph/run_profile.h"
#include "wrapped_cpu_plugin.h"

namespace kiln::graph {
namespace {

// The calls and MiB columns of the summary row named `place`; calls -1 if
// the table has no such row.
struct SummaryRow {
  double ms = -1;
  long calls = -1;
  double mib = 0;
};
// Matched by hand, "  <place>  <ms>  <share>%  <calls>[  <MiB>]": GCC 12's
// <regex> trips -Wmaybe-uninitialized under the ASan preset.
SummaryRow summary_row(const std::string& table, const std::string& place) {
  std::istringstream lines(table);
  const std::string prefix = "  " + place + " ";
  for (std::string line; std::getline(lines, line);) {
    if (!line.starts_with(prefix)) continue;
    std::istringstream fields(line.substr(prefix.size()));
    SummaryRow row;
    std::string share;
    if (!(fields >> row.ms >> share >> row.calls) || !share.ends_with('%')) continue;
    if (!(fields >> row.mib)) row.mib = 0;
    return row;
  }
  return {};
}

class RunProfileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    partial_ = testing::open_wrapped_cpu();
    testing::wrapped_hooks().supported = [](kiln_op op) { return op != KILN_OP_MATMUL; };
    cpu_ = Registry::instance().open("cpu", 0, 0);
    fallback_ = std::make_unique<FallbackDevice>(*cpu_);
    // scale on the plugin, matmul on the fallback, gelu back on the plugin:
    // a copy each way, and the matmul's output port copied back as well.
    // Large enough that each piece takes microseconds, the table's unit.
    ValueId x = g_.input("x", KILN_F32, {64, 256}), w = g_.input("w", KILN_F32, {256, 64});
    ValueId h = g_.matmul(g_.scale(x, 0.5f), w);
    g_.output("y", g_.gelu(h));
    g_.output("h", h);
  }

  Graph g_;
  std::unique_ptr<Device> partial_, cpu_;
  std::unique_ptr<FallbackDevice> fallback_;
};

TEST_F(RunProfileTest, TimesPiecesOnBothDevicesAndTheCopiesWithTheirBytes) {
  Executable exe(*partial_, g_, fallback_.get());
  exe.set_name("step");
  ASSERT_EQ(exe.split().fallback, "cpu");
  RunProfile profile;
  {
    RunProfile::Recording recording(profile);
    EXPECT_EQ(RunProfile::active(), &profile);
    for (int i = 0; i < 3; ++i) exe.run();
  }
  EXPECT_EQ(RunProfile::active(), nullptr);
  exe.run();  // not recorded
  const std::string table = profile.report("kiln profile: test");
  SCOPED_TRACE(table);
  const SummaryRow plugin = summary_row(table, "wrapped plugin"), fallback = summary_row(table, "cpu fallback");
  const SummaryRow to_cpu = summary_row(table, "copies wrapped -> cpu"),
                   back = summary_row(table, "copies cpu -> wrapped");
  // Two plugin pieces (scale, gelu) and one fallback piece per run.
  EXPECT_EQ(plugin.calls, 6);
  EXPECT_EQ(fallback.calls, 3);
  EXPECT_GT(plugin.ms, 0);
  EXPECT_GT(fallback.ms, 0);
  ASSERT_GT(to_cpu.calls, 0);
  ASSERT_GT(back.calls, 0);
  // Every byte the split plans per run, three times, in one direction or the other.
  const double mib_per_run = static_cast<double>(exe.split().bytes_per_run) / (1 << 20);
  EXPECT_NEAR(to_cpu.mib + back.mib, 3 * mib_per_run, 0.02);
  // The pieces by the graph's name (one compile unit: no unit names).
  EXPECT_NE(table.find("cpu fallback     step "), std::string::npos);
  EXPECT_EQ(table.find("outside the layers"), std::string::npos);
  EXPECT_NE(table.find("matmul x1"), std::string::npos) << "the fallback piece's ops";
  EXPECT_EQ(table.find("host collectives"), std::string::npos);
}

TEST_F(RunProfileTest, RestartZeroesTheRowsAndRecordingGoesOn) {
  Executable exe(*partial_, g_, fallback_.get());
  RunProfile profile;
  RunProfile::Recording recording(profile);
  exe.run();
  profile.restart();
  EXPECT_EQ(summary_row(profile.report("t"), "wrapped plugin").calls, -1) << "rows with no calls are left out";
  exe.run();
  EXPECT_EQ(summary_row(profile.report("t"), "wrapped plugin").calls, 2);
  EXPECT_EQ(summary_row(profile.report("t"), "cpu fallback").calls, 1);
}

TEST_F(RunProfileTest, NothingIsRecordedWithoutAnActiveProfile) {
  RunProfile profile;  // never made active
  Executable exe(*partial_, g_, fallback_.get());
  exe.run();
  const std::string table = profile.report("t");
  EXPECT_EQ(summary_row(table, "wrapped plugin").calls, -1) << table;
  EXPECT_EQ(summary_row(table, "cpu fallback").calls, -1) << table;
}

}  // namespace
}  // namespace kiln::graph
