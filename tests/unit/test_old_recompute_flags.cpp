// Megatron's 2021-2023 recompute flags (--checkpoint-activations,
// --activations-checkpoint-method, --activations-checkpoint-num-layers) set
// the model's recomputation exactly as the --recompute-* flags they became;
// mixing old and new names, or a conflict between them, is refused in one
// line. tests/cli/recompute.sh shows recomputation keeps the losses bitwise.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/error.h"
#include "small_train_model.h"
#include "trainer/train_config.h"

namespace kiln::trainer {
namespace {

using testing::error_of;
using testing::model_with;

void expect_full(const GptConfig& m, RecomputeMethod method, int64_t layers) {
  EXPECT_EQ(m.recompute_granularity, RecomputeGranularity::Full);
  EXPECT_EQ(m.recompute_method, method);
  EXPECT_EQ(m.recompute_num_layers, layers);
}

TEST(OldRecomputeFlags, CheckpointActivationsIsFullUniformOneLayer) {
  expect_full(model_with({"--checkpoint-activations"}), RecomputeMethod::Uniform, 1);
  expect_full(model_with({"--checkpoint-activations", "--activations-checkpoint-num-layers", "2"}),
              RecomputeMethod::Uniform, 2);
  expect_full(model_with({"--checkpoint-activations", "--activations-checkpoint-method", "uniform"}),
              RecomputeMethod::Uniform, 1);
}

TEST(OldRecomputeFlags, MethodAloneTurnsFullRecomputationOn) {
  expect_full(model_with({"--activations-checkpoint-method", "uniform"}), RecomputeMethod::Uniform, 1);
  expect_full(model_with({"--activations-checkpoint-method", "block", "--activations-checkpoint-num-layers", "3"}),
              RecomputeMethod::Block, 3);
}

TEST(OldRecomputeFlags, WithoutThemNothingIsRecomputed) {
  EXPECT_EQ(model_with({}).recompute_granularity, RecomputeGranularity::None);
}

TEST(OldRecomputeFlags, ConflictsAndMixesAreRefused) {
  const auto has = [](const std::string& error, const std::string& part) {
    return error.find(part) != std::string::npos;
  };
  EXPECT_TRUE(has(error_of({"--checkpoint-activations", "--activations-checkpoint-method", "block"}),
                  "--checkpoint-activations means --activations-checkpoint-method uniform, not block"));
  EXPECT_TRUE(has(error_of({"--checkpoint-activations", "--recompute-activations"}), "not both"));
  EXPECT_TRUE(has(error_of({"--activations-checkpoint-method", "uniform", "--recompute-num-layers", "1"}), "not both"));
  EXPECT_TRUE(has(error_of({"--activations-checkpoint-num-layers", "2"}),
                  "--activations-checkpoint-num-layers applies with --activations-checkpoint-method"));
  EXPECT_TRUE(has(error_of({"--activations-checkpoint-method", "all"}), "is not one of uniform, block"));
  EXPECT_TRUE(has(error_of({"--checkpoint-activations", "--activations-checkpoint-num-layers", "5"}),
                  "between 1 and num_layers_per_pipeline_rank: 4 (--activations-checkpoint-num-layers)"));
}

}  // namespace
}  // namespace kiln::trainer
