// kiln train's defaults are Megatron-LM's wherever Megatron has one (issue
// 34): the table below is docs/CLI.md's, each row read from the parsed flags
// (Flags::values) of a command line that gives none. Megatron's values are
// those of megatron/training/arguments.py and its training config at the
// commit of tests/data/megatron_flags.txt, except --eval-interval (see
// TrainConfig::eval_interval).
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "core/error.h"
#include "trainer/train_config.h"

using kiln::trainer::Flags;
using kiln::trainer::TrainConfig;

namespace {

struct Default {
  const char* flag;
  const char* value;  // as Flags::values() prints it
  bool kilns;         // kiln's own: Megatron has no default (None, or required)
};

// Megatron's default where it has one, kiln's where it has none.
const Default kDefaults[] = {
    {"--lr-warmup-iters", "0", false},  // with --lr-warmup-fraction not given (Megatron's None): no warmup
    {"--lr-warmup-samples", "0", false},
    {"--lr-decay-style", "linear", false},
    {"--min-lr", "0", false},
    {"--weight-decay", "0.01", false},
    {"--adam-beta1", "0.90000000000000002", false},
    {"--adam-beta2", "0.999", false},
    {"--adam-eps", "1e-08", false},
    {"--clip-grad", "1", false},
    {"--eval-interval", "1000", false},
    {"--eval-iters", "100", false},
    {"--log-interval", "100", false},
    {"--seed", "1234", false},
    {"--split", "969,30,1", false},
    {"--make-vocab-size-divisible-by", "128", false},
    {"--hidden-dropout", "0.1", false},
    {"--attention-dropout", "0.1", false},
    {"--init-method-std", "0.02", false},
    {"--norm-epsilon", "1e-05", false},
    {"--distributed-timeout-minutes", "10", false},
    {"--lr", "0.0030000000000000001", true},
    {"--micro-batch-size", "32", true},
    {"--train-iters", "300", true},
    {"--num-layers", "4", true},
    {"--hidden-size", "128", true},
    {"--num-attention-heads", "4", true},
    {"--seq-length", "64", true},
    {"--vocab-size", "256", true},  // the embedded byte-level corpus
};

struct Parsed {
  TrainConfig cfg;
  Flags flags{"train"};
  explicit Parsed(const std::vector<std::string>& args) {
    cfg.register_flags(flags);
    flags.parse(args);
  }
};

std::string finalize_error(const std::vector<std::string>& args) {
  Parsed p(args);
  try {
    p.cfg.finalize(p.flags);
  } catch (const kiln::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(TrainDefaults, TableHolds) {
  Parsed p({});
  std::map<std::string, std::string> values;
  for (const auto& [flag, value] : p.flags.values()) values[flag] = value;
  for (const Default& d : kDefaults) {
    ASSERT_TRUE(values.count(d.flag)) << d.flag << " is not a kiln train flag";
    EXPECT_EQ(values[d.flag], d.value) << d.flag << (d.kilns ? " (kiln's default)" : " (Megatron's default)");
  }
}

TEST(TrainDefaults, NoWarmupUnlessGiven) {
  Parsed none({});
  none.cfg.finalize(none.flags);
  EXPECT_EQ(none.cfg.lr_warmup_iters, 0);
  EXPECT_EQ(none.cfg.lr_schedule().lr(0), none.cfg.lr);  // the first step runs at --lr
  EXPECT_EQ(none.cfg.lr_schedule().lr(300), 0.0);        // linear decay to --min-lr 0

  Parsed fraction({"--lr-warmup-fraction", "0.1"});
  fraction.cfg.finalize(fraction.flags);
  EXPECT_EQ(fraction.cfg.lr_warmup_iters, 30);  // 10% of --train-iters 300

  Parsed samples({"--train-samples", "3200", "--lr-warmup-fraction", "0.25"});
  samples.cfg.finalize(samples.flags);
  EXPECT_EQ(samples.cfg.lr_warmup_samples, 800);
}

TEST(TrainDefaults, OneWayToGiveTheWarmup) {
  // Megatron's assertion: a fraction beside a non-zero count.
  EXPECT_NE(finalize_error({"--lr-warmup-fraction", "0.1", "--lr-warmup-iters", "5"})
                .find("--lr-warmup-fraction and --lr-warmup-iters both set the warmup"),
            std::string::npos);
  EXPECT_NE(finalize_error({"--train-samples", "3200", "--lr-warmup-fraction", "0.1", "--lr-warmup-samples", "64"})
                .find("--lr-warmup-fraction and --lr-warmup-samples both set the warmup"),
            std::string::npos);
  // Megatron checks the count's value: 0 beside a fraction is accepted.
  EXPECT_EQ(finalize_error({"--lr-warmup-fraction", "0.1", "--lr-warmup-iters", "0"}), "");
}

TEST(TrainDefaults, HelpMarksKilnsOwn) {
  Parsed p({});
  const std::string help = p.flags.help();
  EXPECT_NE(help.find("--lr X                            peak learning rate (kiln's default"), std::string::npos);
  EXPECT_NE(help.find("(default: not given, no warmup)"), std::string::npos);
  EXPECT_NE(help.find("AdamW beta2 (default 0.999)"), std::string::npos);
  EXPECT_NE(help.find("evaluate every N steps (default 1000)"), std::string::npos);
}
