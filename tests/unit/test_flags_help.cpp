// Flags::help: a folded section (kiln train's Megatron compatibility rows)
// shows its summary under --help and its flags only under --help-all; a
// help text that states its own default gets no second "(default ...)".
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "trainer/flags.h"
#include "trainer/megatron_compat_flags.h"
#include "trainer/train_config.h"

namespace kiln::trainer {
namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(FlagsHelp, FoldedSectionShowsItsSummaryUnlessAll) {
  Flags f("test");
  int64_t steps = 3;
  bool fused = false;
  f.add("--steps", &steps, "steps");
  f.section("Compatibility", "  1 row; --help-all lists it");
  f.add("--fused", &fused, "no effect");
  f.section("");
  const std::string help = f.help(), all = f.help(true);
  EXPECT_TRUE(has(help, "--steps N")) << help;
  EXPECT_TRUE(has(help, "\nCompatibility:\n  1 row; --help-all lists it\n")) << help;
  EXPECT_FALSE(has(help, "--fused")) << help;
  EXPECT_TRUE(has(all, "--steps N")) << all;
  EXPECT_TRUE(has(all, "\nCompatibility:\n  --fused")) << all;
  EXPECT_FALSE(has(all, "1 row")) << all;
  EXPECT_FALSE(f.parse({"--help-all"}));  // printed; nothing to run
}

TEST(FlagsHelp, StatedDefaultIsNotRepeated) {
  Flags f("test");
  int64_t decay = 0, other = 0;
  f.add("--decay", &decay, "decay steps (default: --steps)");
  f.add("--other", &other, "other steps");
  const std::string help = f.help();
  EXPECT_TRUE(has(help, "decay steps (default: --steps)\n")) << help;
  EXPECT_TRUE(has(help, "other steps (default 0)\n")) << help;
}

TEST(FlagsHelp, TrainHelpCountsTheCompatibilityRows) {
  TrainConfig cfg;
  Flags f("train");
  cfg.register_flags(f);
  int counts[4] = {0, 0, 0, 0};
  for (const CompatFlag& row : megatron_compat_flags()) ++counts[static_cast<int>(row.kind)];
  const std::string help = f.help(), all = f.help(true);
  EXPECT_TRUE(has(help, "  " + std::to_string(megatron_compat_flags().size()) +
                            " rows: " + std::to_string(counts[static_cast<int>(CompatKind::NoEffect)]) + " no effect"))
      << help;
  EXPECT_TRUE(has(help, std::to_string(counts[static_cast<int>(CompatKind::Refused)]) + " refused")) << help;
  for (const CompatFlag& row : megatron_compat_flags()) {
    EXPECT_FALSE(has(help, "\n  " + row.name + " ")) << row.name << " is listed by --help";
    EXPECT_TRUE(has(all, "\n  " + row.name + " ")) << row.name << " is not listed by --help-all";
  }
}

}  // namespace
}  // namespace kiln::trainer
