// Megatron's old names for flags kiln implements (Flags::add_alias):
// --layernorm-epsilon (--norm-epsilon before 4dc0715204, 2023-09-08) and
// --checkpoint-num-layers (--activations-checkpoint-num-layers before
// c1e0689d92, 2021-08-10) set what their new names set; giving both names,
// or the old layer count without the recomputation it sized, is refused in
// one line naming the flag given.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "small_train_model.h"
#include "trainer/flags.h"
#include "trainer/train_config.h"

namespace kiln::trainer {
namespace {

using testing::error_of;
using testing::model_with;

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(FlagAlias, SetsTheSameTargetAndRefusesBothNames) {
  double value = 1;
  Flags flags("test");
  flags.add("--new-name", &value, "the value", Bounds::above(0));
  flags.add_alias("--old-name", "--new-name", "the old name of --new-name");
  flags.parse({"--old-name", "2.5"});
  EXPECT_EQ(value, 2.5);
  EXPECT_TRUE(flags.given("--old-name"));
  EXPECT_FALSE(flags.given("--new-name"));
  EXPECT_TRUE(has(flags.help(), "--old-name"));

  Flags both("test");
  both.add("--new-name", &value, "the value", Bounds::above(0));
  both.add_alias("--old-name", "--new-name", "the old name of --new-name");
  try {
    both.parse({"--new-name", "1", "--old-name", "2"});
    FAIL() << "both names were accepted";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "kiln test: --old-name is the old name of --new-name; give one of them");
  }
  // The alias keeps the flag's bounds, and the error names the name given.
  Flags bounded("test");
  bounded.add("--new-name", &value, "the value", Bounds::above(0));
  bounded.add_alias("--old-name", "--new-name", "the old name of --new-name");
  try {
    bounded.parse({"--old-name", "-1"});
    FAIL() << "a value out of bounds was accepted";
  } catch (const Error& e) {
    EXPECT_TRUE(has(e.what(), "--old-name must be above 0")) << e.what();
  }
}

TEST(MegatronAliases, LayernormEpsilonIsNormEpsilon) {
  EXPECT_FLOAT_EQ(model_with({"--layernorm-epsilon", "1e-6"}).layernorm_epsilon, 1e-6f);
  EXPECT_FLOAT_EQ(model_with({"--norm-epsilon", "1e-6"}).layernorm_epsilon, 1e-6f);
  EXPECT_TRUE(has(error_of({"--norm-epsilon", "1e-6", "--layernorm-epsilon", "1e-6"}),
                  "--layernorm-epsilon is the old name of --norm-epsilon; give one of them"));
  EXPECT_TRUE(has(error_of({"--layernorm-epsilon", "0"}), "--layernorm-epsilon must be positive"));
}

TEST(MegatronAliases, CheckpointNumLayersSizesCheckpointActivationsChunks) {
  // Megatron until 2021-08: --checkpoint-activations checkpointed chunks of
  // --checkpoint-num-layers layers (its later uniform method).
  const GptConfig m = model_with({"--checkpoint-activations", "--checkpoint-num-layers", "2"});
  EXPECT_EQ(m.recompute_granularity, RecomputeGranularity::Full);
  EXPECT_EQ(m.recompute_method, RecomputeMethod::Uniform);
  EXPECT_EQ(m.recompute_num_layers, 2);
  // Alone it sized nothing (Megatron read it only under --checkpoint-activations).
  EXPECT_TRUE(has(error_of({"--checkpoint-num-layers", "2"}),
                  "--checkpoint-num-layers applies with --activations-checkpoint-method or --checkpoint-activations"));
  EXPECT_TRUE(has(error_of({"--checkpoint-activations", "--checkpoint-num-layers", "2",
                            "--activations-checkpoint-num-layers", "2"}),
                  "--checkpoint-num-layers is the old name of --activations-checkpoint-num-layers"));
  EXPECT_TRUE(has(error_of({"--checkpoint-activations", "--checkpoint-num-layers", "5"}),
                  "between 1 and num_layers_per_pipeline_rank: 4 (--checkpoint-num-layers)"));
  EXPECT_TRUE(has(error_of({"--checkpoint-num-layers", "2", "--recompute-granularity", "full"}), "not both"));
}

}  // namespace
}  // namespace kiln::trainer
