// The host-side position tables against numpy computed from the published
// formulas (tests/tools/gen_position_tables.py writes the expected values):
// rotary frequencies and cos/sin tables (with Llama-3.1's scaling) and
// ALiBi slopes (llm-foundry's gen_slopes, non-power-of-two head counts
// included).
#include <gtest/gtest.h>

#include "position_tables_expected.h"
#include "trainer/model/alibi_slopes.h"
#include "trainer/model/position_inputs.h"
#include "trainer/model/rotary_tables.h"

namespace kiln::trainer {
namespace {

void expect_close(const std::vector<double>& got, const std::vector<double>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], 1e-12 * (1.0 + std::abs(want[i]))) << what << "[" << i << "]";
}

TEST(RotaryTables, MatchNumpy) {
  for (const expected::RotaryCase& e : expected::kRotaryCases) {
    GptConfig c;
    c.hidden_size = e.head_dim * 2;
    c.num_attention_heads = 2;
    c.seq_length = e.positions;
    c.position_embedding_type = PositionEmbedding::Rope;
    c.rotary_base = e.base;
    c.rotary_percent = static_cast<float>(e.rotary_percent);
    c.use_rope_scaling = e.use_rope_scaling;
    c.rope_scaling_factor = static_cast<float>(e.scaling_factor);
    expect_close(rotary_inverse_frequencies(c), e.inv_freq, std::string(e.name) + " inv_freq");
    const RotaryTables t = rotary_tables(c);
    EXPECT_EQ(t.positions, e.positions);
    EXPECT_EQ(t.pairs, static_cast<int64_t>(e.inv_freq.size()));
    expect_close(t.cos, e.cos, std::string(e.name) + " cos");
    expect_close(t.sin, e.sin, std::string(e.name) + " sin");
  }
}

TEST(RotaryTables, ScalingKeepsHighAndStretchesLowFrequencies) {
  // A wavelength under 8192 / 4 is kept, one over 8192 divided by the factor.
  const std::vector<double> scaled = llama3_scaled_frequencies({1.0, 1e-5}, 8.0);
  EXPECT_EQ(scaled[0], 1.0);
  EXPECT_DOUBLE_EQ(scaled[1], 1e-5 / 8.0);
}

TEST(AlibiSlopes, MatchLlmFoundry) {
  for (const expected::AlibiCase& e : expected::kAlibiCases)
    expect_close(alibi_slopes(e.heads, e.bias_max), e.slopes, std::to_string(e.heads) + " heads");
}

TEST(AlibiSlopes, EachRankHoldsItsHeadsSlopes) {
  const std::vector<double> all = alibi_slopes(6, 8.0);
  const std::vector<double> second = alibi_slopes_of_rank(6, 8.0, 2, 1);
  EXPECT_EQ(second, (std::vector<double>{all[3], all[4], all[5]}));
}

TEST(PositionInputs, TablesOfTheConfigAndTheRanksSlopes) {
  GptConfig c;
  c.hidden_size = 32;
  c.num_attention_heads = 4;
  c.seq_length = 5;
  EXPECT_TRUE(position_inputs(c, 0).empty());  // learned positions need none
  // ... unless the table is larger than the sequence: the ids of its first T rows.
  c.max_position_embeddings = 9;
  const auto learned = position_inputs(c, 0);
  ASSERT_EQ(learned.size(), 1u);
  EXPECT_EQ(learned.at(kPositionIdsInput).shape, (graph::Shape{5}));
  EXPECT_EQ(learned.at(kPositionIdsInput).ids, (std::vector<int32_t>{0, 1, 2, 3, 4}));
  c.max_position_embeddings = 0;
  c.position_embedding_type = PositionEmbedding::Rope;
  c.rotary_percent = 0.5f;  // head dim 8: 2 pairs
  const auto rope = position_inputs(c, 0);
  ASSERT_EQ(rope.size(), 2u);
  EXPECT_EQ(rope.at(kRotaryCosInput).shape, (graph::Shape{5, 2}));
  const RotaryTables t = rotary_tables(c);
  for (size_t i = 0; i < t.cos.size(); ++i) {
    EXPECT_EQ(rope.at(kRotaryCosInput).values[i], static_cast<float>(t.cos[i]));
    EXPECT_EQ(rope.at(kRotarySinInput).values[i], static_cast<float>(t.sin[i]));
  }
  c.position_embedding_type = PositionEmbedding::Alibi;
  c.tensor_parallel = 2;
  const auto alibi = position_inputs(c, 1);
  ASSERT_EQ(alibi.size(), 1u);
  const std::vector<double> all = alibi_slopes(4, 8.0);
  EXPECT_EQ(alibi.at(kAlibiSlopesInput).shape, (graph::Shape{2}));
  EXPECT_EQ(alibi.at(kAlibiSlopesInput).values,
            (std::vector<float>{static_cast<float>(all[2]), static_cast<float>(all[3])}));
}

}  // namespace
}  // namespace kiln::trainer
