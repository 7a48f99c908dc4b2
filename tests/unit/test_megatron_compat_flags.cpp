// The Megatron compatibility table (trainer/megatron_compat_flags.h): every
// row parses with Megatron's arity, checks its values against Megatron's
// choices, refuses what kiln lacks in one line naming the feature, and
// appears in docs/MEGATRON_FLAGS.md exactly as the code states it.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "trainer/megatron_compat_flags.h"
#include "trainer/train_config.h"

using kiln::trainer::CompatArity;
using kiln::trainer::CompatKind;
using kiln::trainer::Flags;
using kiln::trainer::megatron_compat_flags;
using kiln::trainer::TrainConfig;

namespace {

// `kiln train`'s flags parsed from args, then the table's checks; returns
// the error message, or "" when the flags are accepted.
std::string check(const std::vector<std::string>& args, std::vector<std::string>* quiet = nullptr) {
  TrainConfig cfg;
  Flags flags("train");
  cfg.register_flags(flags);
  try {
    flags.parse(args);
    cfg.megatron_compat.finalize(flags);
    if (quiet) *quiet = cfg.megatron_compat.accepted_without_effect(flags);
  } catch (const kiln::Error& e) {
    return e.what();
  }
  return "";
}

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST(MegatronCompatFlags, RowsAreUniqueAndNotKilnsOwnFlags) {
  std::set<std::string> names;
  for (const auto& row : megatron_compat_flags()) {
    EXPECT_TRUE(names.insert(row.name).second) << row.name << " has two rows";
    EXPECT_FALSE(row.why.empty()) << row.name;
    if (row.kind == CompatKind::KilnValue) {
      EXPECT_EQ(row.arity, CompatArity::One) << row.name;
      ASSERT_FALSE(row.kiln_values.empty()) << row.name;
      for (const auto& v : row.kiln_values) {
        if (row.choices.empty()) continue;
        EXPECT_NE(std::find(row.choices.begin(), row.choices.end(), v), row.choices.end()) << row.name << " " << v;
      }
    }
  }
  // Registered once: no row repeats a flag kiln implements itself.
  TrainConfig cfg;
  Flags flags("train");
  cfg.register_flags(flags);
  std::set<std::string> all;
  for (const auto& [name, value] : flags.values()) EXPECT_TRUE(all.insert(name).second) << name << " registered twice";
}

TEST(MegatronCompatFlags, ArityFollowsMegatron) {
  std::vector<std::string> quiet;
  EXPECT_EQ(check({"--use-mcore-models", "--transformer-impl", "local", "--manual-gc-interval", "500",
                   "--cross-entropy-loss-fusion", "--num-workers", "1"},
                  &quiet),
            "");
  EXPECT_EQ(quiet,
            (std::vector<std::string>{"--use-mcore-models", "--transformer-impl local", "--cross-entropy-loss-fusion",
                                      "--manual-gc-interval 500", "--num-workers 1"}));
  // A switch takes no value; a value flag needs one; a list takes several.
  EXPECT_TRUE(has(check({"--manual-gc=1"}), "--manual-gc is a switch and takes no value"));
  EXPECT_TRUE(has(check({"--transformer-impl", "--manual-gc"}), "--transformer-impl needs a value"));
  EXPECT_EQ(check({"--profile-ranks", "0", "1", "--seed", "3"}), "");
  EXPECT_TRUE(has(check({"--profile-ranks", "0", "x"}), "--profile-ranks expects an integer, got 'x'"));
}

TEST(MegatronCompatFlags, ValuesAreCheckedAgainstMegatronsChoices) {
  EXPECT_EQ(check({"--transformer-impl", "transformer_engine", "--empty-unused-memory-level", "1"}), "");
  const std::string typo = check({"--transformer-impl", "te"});
  EXPECT_TRUE(has(typo,
                  "--transformer-impl te: not one of Megatron's choices (local, transformer_engine, "
                  "inference_optimized)"))
      << typo;
  EXPECT_TRUE(has(check({"--empty-unused-memory-level", "3"}), "not one of Megatron's choices (0, 1, 2)"));
  EXPECT_TRUE(has(check({"--num-workers", "two"}), "--num-workers expects an integer, got 'two'"));
  EXPECT_TRUE(has(check({"--ckpt-format", "torch-dist"}), "--ckpt-format torch-dist: not one of Megatron's choices"));
}

TEST(MegatronCompatFlags, OnlyTheValueKilnImplementsIsAccepted) {
  std::vector<std::string> quiet;
  EXPECT_EQ(check({"--context-parallel-size", "1", "--optimizer", "adam", "--dataloader-type", "single",
                   "--expert-model-parallel-size", "1", "--main-params-dtype", "fp32", "--exp-avg-dtype", "fp32"},
                  &quiet),
            "");
  EXPECT_EQ(quiet.size(), 6u);
  const std::string cp = check({"--context-parallel-size", "2"});
  EXPECT_TRUE(has(cp, "--context-parallel-size 2: kiln has no context parallelism")) << cp;
  EXPECT_TRUE(has(cp, "use --context-parallel-size 1 or drop the flag")) << cp;
  EXPECT_TRUE(has(check({"--optimizer", "sgd"}), "kiln's optimizer is AdamW"));
  EXPECT_TRUE(has(check({"--optimizer", "adamw"}), "not one of Megatron's choices"));  // typo, not a refusal
  EXPECT_TRUE(has(check({"--dataloader-type", "cyclic"}), "Megatron's single sampler"));
  EXPECT_TRUE(
      has(check({"--main-params-dtype", "fp16"}), "--main-params-dtype fp16: kiln keeps the main parameters in fp32"));
}

TEST(MegatronCompatFlags, RefusedFlagsNameTheMissingFeature) {
  // FP8 options beyond the per-tensor recipes (--fp8-format is kiln's own flag).
  EXPECT_TRUE(has(check({"--no-fp8-wgrad"}), "--no-fp8-wgrad: kiln's FP8 training is per-tensor scaling"));
  EXPECT_TRUE(has(check({"--num-layers-at-start-in-bf16", "1"}), "FP8"));
  EXPECT_TRUE(has(check({"--num-experts", "8"}), "--num-experts 8: kiln has no mixture-of-experts (MoE) layers"));
  EXPECT_TRUE(has(check({"--moe-router-load-balancing-type", "aux_loss"}), "mixture-of-experts"));
}

TEST(MegatronCompatFlags, OutputsKilnLacksAreAcceptedButNotListedAsNoEffect) {
  std::vector<std::string> quiet;
  EXPECT_EQ(check({"--wandb-project", "p", "--wandb-exp-name", "e", "--log-throughput", "--ckpt-format", "torch_dist",
                   "--profile-step-start", "4"},
                  &quiet),
            "");
  EXPECT_TRUE(quiet.empty());
}

TEST(MegatronCompatFlags, NoPositionEmbeddingOnlyWithRope) {
  EXPECT_TRUE(has(check({"--no-position-embedding"}), "--no-position-embedding needs --position-embedding-type rope"));
  EXPECT_EQ(check({"--no-position-embedding", "--position-embedding-type", "rope"}), "");
}

// --help-all's listing (--help counts the rows: tests/unit/test_flags_help.cpp).
TEST(MegatronCompatFlags, HelpListsThemInTheirOwnSectionAfterKilnsFlags) {
  TrainConfig cfg;
  Flags flags("train");
  cfg.register_flags(flags);
  flags.add("--after", &cfg.save, "a flag registered after the table stays in the main list");
  const std::string help = flags.help(true);
  const size_t section = help.find("\nMegatron flags accepted for compatibility");
  ASSERT_NE(section, std::string::npos);
  EXPECT_LT(help.find("  --tensorboard-dir"), section);
  EXPECT_LT(help.find("  --after"), section);
  for (const auto& row : megatron_compat_flags()) EXPECT_GT(help.find("  " + row.name + " "), section) << row.name;
  EXPECT_TRUE(has(help, "[only 1] kiln has no context parallelism"));
}

TEST(MegatronCompatFlags, DocsHoldTheTable) {
  std::ifstream in(std::string(KILN_TEST_DATA_DIR) + "/../../docs/MEGATRON_FLAGS.md");
  ASSERT_TRUE(in) << "docs/MEGATRON_FLAGS.md not found";
  std::stringstream doc;
  doc << in.rdbuf();
  const std::string table = kiln::trainer::compat_flags_markdown();
  EXPECT_TRUE(has(doc.str(), table))
      << "docs/MEGATRON_FLAGS.md lacks the table of trainer/megatron_compat_*.cpp; paste:\n"
      << table;
}
