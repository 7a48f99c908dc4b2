// The layer spec (trainer/model/layer_spec.h): the parts the architecture
// options choose, the ops the builder assembles from them, and the Hugging
// Face architecture an export picks by them.
#include <gtest/gtest.h>

#include <algorithm>

#include "core/error.h"
#include "trainer/checkpoint/hf_architecture.h"
#include "trainer/model/gpt.h"
#include "trainer/model/layer_spec.h"

namespace kiln::trainer {
namespace {

GptConfig llama_like() {
  GptConfig c;
  c.normalization = Normalization::RMSNorm;
  c.position_embedding_type = PositionEmbedding::Rope;
  c.swiglu = true;
  c.add_bias_linear = false;
  c.untie_embeddings_and_output_weights = true;
  return c;
}

GptConfig mpt_like() {
  GptConfig c;
  c.position_embedding_type = PositionEmbedding::Alibi;
  c.exact_gelu = true;
  c.add_bias_linear = false;
  c.add_bias_layernorm = false;
  return c;
}

bool has_op(const graph::Graph& g, kiln_op op) {
  return std::any_of(g.nodes().begin(), g.nodes().end(), [&](const graph::Node& n) { return n.op == op; });
}

TEST(LayerSpec, OptionsChooseTheParts) {
  const LayerSpec gpt2 = layer_spec(GptConfig{});
  EXPECT_EQ(gpt2.norm, Normalization::LayerNorm);
  EXPECT_EQ(gpt2.positions, PositionEmbedding::LearnedAbsolute);
  EXPECT_EQ(gpt2.mlp, MlpKind::Gelu);
  const LayerSpec llama = layer_spec(llama_like());
  EXPECT_EQ(llama.norm, Normalization::RMSNorm);
  EXPECT_EQ(llama.positions, PositionEmbedding::Rope);
  EXPECT_EQ(llama.mlp, MlpKind::SwiGlu);
  EXPECT_EQ(layer_spec(mpt_like()).mlp, MlpKind::GeluErf);
  GptConfig primer;
  primer.squared_relu = true;
  EXPECT_EQ(layer_spec(primer).mlp, MlpKind::SquaredRelu);
  EXPECT_STREQ(to_string(MlpKind::SwiGlu), "swiglu");
}

// Each MLP kind is its own op in the built graph, and only that one.
TEST(LayerSpec, TheBuilderAssemblesTheChosenParts) {
  struct Case {
    GptConfig cfg;
    kiln_op op;
  };
  GptConfig primer, erf;
  primer.squared_relu = true;
  erf.exact_gelu = true;
  for (const Case& k : {Case{GptConfig{}, KILN_OP_GELU}, Case{erf, KILN_OP_GELU_ERF},
                        Case{primer, KILN_OP_SQUARED_RELU}, Case{llama_like(), KILN_OP_SILU}}) {
    graph::Graph g;
    build_gpt_forward(g, k.cfg, 1);
    for (kiln_op op : {KILN_OP_GELU, KILN_OP_GELU_ERF, KILN_OP_SQUARED_RELU, KILN_OP_SILU})
      EXPECT_EQ(has_op(g, op), op == k.op) << to_string(layer_spec(k.cfg).mlp) << " " << kiln_op_name(op);
    EXPECT_EQ(has_op(g, KILN_OP_RMSNORM), layer_spec(k.cfg).norm == Normalization::RMSNorm);
    EXPECT_EQ(has_op(g, KILN_OP_ROPE), layer_spec(k.cfg).positions == PositionEmbedding::Rope);
  }
}

// The export's architecture follows the spec: the position slot picks it,
// and the mapper names another slot it cannot express.
TEST(LayerSpec, HfArchitectureFollowsTheSpec) {
  const std::map<std::string, SafeTensor> none;
  GptConfig c;
  c.position_embedding_type = PositionEmbedding::None;
  try {
    kiln_to_hf(c, none);
    ADD_FAILURE() << "exported a model without positions";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--position-embedding-type none"), std::string::npos) << e.what();
  }
  GptConfig gelu_llama = llama_like();
  gelu_llama.swiglu = false;
  try {
    kiln_to_hf(gelu_llama, none);
    ADD_FAILURE() << "exported a GELU MLP as Llama";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("LlamaForCausalLM"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("GELU MLP"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kiln::trainer
