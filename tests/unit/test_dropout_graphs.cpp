// Where the GPT graphs apply dropout (trainer/model/dropout_keys.h), and the
// keys the trainer feeds: Megatron's places (after the embeddings, on the
// attention probabilities, on each attention and MLP output), none in
// evaluation or generation, and the element offsets that make a
// tensor-parallel rank draw the single-process masks of its heads.
#include <gtest/gtest.h>

#include <array>
#include <map>

#include "trainer/model/dropout_keys.h"
#include "trainer/model/step_graphs.h"

namespace kiln::trainer {
namespace {

GptConfig with_dropout(float hidden, float attention) {
  GptConfig c;
  c.num_layers = 3;
  c.hidden_size = 32;
  c.num_attention_heads = 4;
  c.seq_length = 8;
  c.hidden_dropout = hidden;
  c.attention_dropout = attention;
  return c;
}

// Dropout nodes by site, and their probability. Every one is a
// DROPOUT_KEYED whose key is its site's input (a forward node and its
// gradient share it), so no layer's graph holds its site as a number.
std::map<int64_t, float> dropout_sites(const graph::Graph& g) {
  std::map<graph::ValueId, int64_t> site_of_key;
  for (const graph::Port& p : g.inputs())
    if (dropout_key_site(p.name) >= 0) site_of_key[p.value] = dropout_key_site(p.name);
  std::map<int64_t, float> sites;
  for (const graph::Node& n : g.nodes()) {
    EXPECT_NE(n.op, KILN_OP_DROPOUT) << "a site as an attribute makes each layer's unit its own";
    if (n.op != KILN_OP_DROPOUT_KEYED) continue;
    EXPECT_TRUE(site_of_key.count(n.inputs.at(1))) << "a dropout's key is not a site's input";
    sites[site_of_key[n.inputs.at(1)]] = n.fattrs.at(0);
  }
  return sites;
}

TEST(DropoutGraphs, TrainingAppliesMegatronsDropoutsAndEvaluationNone) {
  const GptConfig c = with_dropout(0.1f, 0.2f);
  const auto sites = dropout_sites(build_train_step(c, 2, GradMode::Overwrite));
  ASSERT_EQ(sites.size(), 1u + 3u * 3u);  // the embeddings, then 3 per layer
  EXPECT_EQ(sites.at(embedding_dropout_site()), 0.1f);
  for (int64_t l = 0; l < c.num_layers; ++l) {
    EXPECT_EQ(sites.at(attention_probs_dropout_site(l)), 0.2f);
    EXPECT_EQ(sites.at(attention_output_dropout_site(l)), 0.1f);
    EXPECT_EQ(sites.at(mlp_output_dropout_site(l)), 0.1f);
  }
  EXPECT_TRUE(dropout_sites(build_eval_step(c, 2)).empty());
  EXPECT_TRUE(dropout_sites(build_generate(c)).empty());
  // Without dropout the graph is the one kiln built before dropout existed.
  EXPECT_TRUE(dropout_sites(build_train_step(with_dropout(0, 0), 2, GradMode::Overwrite)).empty());
  const auto hidden_only = dropout_sites(build_train_step(with_dropout(0.1f, 0), 2, GradMode::Overwrite));
  EXPECT_EQ(hidden_only.size(), 1u + 2u * 3u);
  EXPECT_EQ(hidden_only.count(attention_probs_dropout_site(0)), 0u);
}

TEST(DropoutGraphs, KeysPlaceEachSampleAndHeadAsOneProcessWould) {
  GptConfig c = with_dropout(0.1f, 0.1f);
  c.tensor_parallel = 2;  // 2 heads per rank
  const uint64_t seed = 0x1234567890ull;
  const DropoutKeys k = dropout_keys(c, seed, 7, 5, 1);
  const auto word = [](int32_t w) { return static_cast<uint32_t>(w); };
  EXPECT_EQ(word(k.hidden[0]), 0x34567890u);  // the seed's low word
  EXPECT_EQ(word(k.hidden[1]), 7u);           // the iteration
  // Sample 5 starts after 5 samples of T*C = 8*32 elements.
  EXPECT_EQ(word(k.hidden[2]), 5u * 8u * 32u);
  EXPECT_EQ(word(k.hidden[3]), 0u);
  // Probabilities: 5 samples of H*T*T = 4*8*8, then rank 1's first head (2 heads in).
  EXPECT_EQ(word(k.attention[2]), 5u * 4u * 64u + 2u * 64u);
  // Offsets past 2^32 carry into the high word.
  const DropoutKeys far = dropout_keys(c, seed, 7, int64_t{1} << 30, 0);
  const uint64_t offset = (uint64_t{1} << 30) * 8u * 32u;
  EXPECT_EQ(word(far.hidden[2]), static_cast<uint32_t>(offset));
  EXPECT_EQ(word(far.hidden[3]), static_cast<uint32_t>(offset >> 32));
}

TEST(DropoutGraphs, EachSiteHasAKeyInputWithItsSite) {
  EXPECT_EQ(dropout_key_input(7), "dropout.site7.key");
  EXPECT_EQ(dropout_key_site("dropout.site7.key"), 7);
  EXPECT_EQ(dropout_key_site(dropout_key_input(0)), 0);
  for (const char* other : {"tokens", "dropout.site.key", "dropout.site7x.key", "dropout.site-1.key", "dropout.site7"})
    EXPECT_EQ(dropout_key_site(other), -1) << other;
  GptConfig c = with_dropout(0.1f, 0.1f);
  const DropoutKeys k = dropout_keys(c, 99, 3, 2, 0);
  // Word 4 is the site; words 0-3 are its kind's key.
  const std::array<int32_t, 5> probs = k.at_site(attention_probs_dropout_site(1));
  const std::array<int32_t, 5> mlp = k.at_site(mlp_output_dropout_site(1));
  EXPECT_EQ(probs[4], attention_probs_dropout_site(1));
  EXPECT_EQ(mlp[4], mlp_output_dropout_site(1));
  for (int w = 0; w < 4; ++w) {
    EXPECT_EQ(probs[w], k.attention[w]);
    EXPECT_EQ(mlp[w], k.hidden[w]);
  }
  EXPECT_EQ(k.at_site(embedding_dropout_site())[2], k.hidden[2]);
}

}  // namespace
}  // namespace kiln::trainer
