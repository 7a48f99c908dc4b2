// Pipeline stages without MPI: Megatron's layer split (even and uneven),
// which parameters each stage holds (the tied word embedding on the first
// and last), that a stage initialises each parameter from its whole-model
// stream, and the ports that join one stage's graphs to the next's.
// tests/cli/mpi_pipeline_*.sh train end to end under mpirun.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "trainer/model/step_graphs.h"
#include "trainer/train_config.h"

namespace kiln::trainer {
namespace {

TrainConfig pipeline(int64_t layers, int64_t stages, int64_t first = 0, int64_t last = 0) {
  TrainConfig cfg;
  cfg.model.num_layers = layers;
  cfg.model.hidden_size = 32;
  cfg.model.num_attention_heads = 4;
  cfg.model.seq_length = 16;
  cfg.pipeline_model_parallel_size = stages;
  cfg.decoder_first_pipeline_num_layers = first;
  cfg.decoder_last_pipeline_num_layers = last;
  return cfg;
}

bool has_port(const std::vector<graph::Port>& ports, const std::string& name) {
  for (const auto& p : ports)
    if (p.name == name) return true;
  return false;
}

TEST(PipelineStages, EvenAndUnevenLayerSplits) {
  const TrainConfig even = pipeline(8, 4);
  for (int64_t s = 0; s < 4; ++s) {
    const GptConfig stage = even.stage_model(s);
    EXPECT_EQ(stage.first_layer, 2 * s);
    EXPECT_EQ(stage.end_layer, 2 * s + 2);
    EXPECT_EQ(stage.pre_process, s == 0);
    EXPECT_EQ(stage.post_process, s == 3);
  }
  // Megatron's uneven split: 3 on the first stage, 1 on the last, the other
  // two share the remaining 4.
  const TrainConfig uneven = pipeline(8, 4, 3, 1);
  const int64_t expected_first[] = {0, 3, 5, 7}, expected_end[] = {3, 5, 7, 8};
  for (int64_t s = 0; s < 4; ++s) {
    EXPECT_EQ(uneven.stage_model(s).first_layer, expected_first[s]);
    EXPECT_EQ(uneven.stage_model(s).end_layer, expected_end[s]);
  }
}

TEST(PipelineStages, StagesPartitionTheModelWithTheTiedEmbeddingOnBothEnds) {
  const TrainConfig cfg = pipeline(4, 2);
  std::map<std::string, uint64_t> whole;
  uint64_t index = 0;
  for (const ParamSpec& s : gpt_parameters(cfg.model)) whole[s.name] = index++;
  std::multiset<std::string> held;
  for (int64_t stage = 0; stage < 2; ++stage)
    for (const ParamSpec& s : gpt_parameters(cfg.stage_model(stage))) {
      held.insert(s.name);
      // The same initial values as one process draws.
      EXPECT_EQ(s.init_stream, whole.at(s.name)) << s.name;
    }
  for (const auto& [name, i] : whole)
    EXPECT_EQ(held.count(name), name == "embedding.word_embeddings.weight" ? 2u : 1u) << name;
  EXPECT_EQ(held.size(), whole.size() + 1);

  TrainConfig untied = cfg;
  untied.model.untie_embeddings_and_output_weights = true;
  size_t words = 0;
  for (int64_t stage = 0; stage < 2; ++stage)
    for (const ParamSpec& s : gpt_parameters(untied.stage_model(stage)))
      words += s.name == "embedding.word_embeddings.weight" ? 1 : 0;
  EXPECT_EQ(words, 1u);
}

TEST(PipelineStages, StageGraphsHandActivationsOnAndGradientsBack) {
  const TrainConfig cfg = pipeline(4, 3, 2, 1);
  const GptConfig first = cfg.stage_model(0), middle = cfg.stage_model(1), last = cfg.stage_model(2);
  const graph::Graph forward = build_stage_forward(first, 2);
  EXPECT_TRUE(has_port(forward.inputs(), "tokens"));
  EXPECT_TRUE(has_port(forward.outputs(), kHiddenOut));

  const graph::Graph middle_step = build_train_step(middle, 2);
  EXPECT_TRUE(has_port(middle_step.inputs(), kHiddenIn));
  EXPECT_TRUE(has_port(middle_step.inputs(), kGradHiddenOut));
  EXPECT_TRUE(has_port(middle_step.outputs(), kGradHiddenIn));
  EXPECT_FALSE(has_port(middle_step.inputs(), "tokens"));
  EXPECT_FALSE(has_port(middle_step.outputs(), "loss"));

  const graph::Graph last_step = build_train_step(last, 2);
  EXPECT_TRUE(has_port(last_step.inputs(), kHiddenIn));
  EXPECT_TRUE(has_port(last_step.inputs(), "targets"));
  EXPECT_TRUE(has_port(last_step.outputs(), "loss"));
  EXPECT_TRUE(has_port(last_step.outputs(), kGradHiddenIn));
  EXPECT_FALSE(has_port(last_step.inputs(), kGradHiddenOut));
}

}  // namespace
}  // namespace kiln::trainer
