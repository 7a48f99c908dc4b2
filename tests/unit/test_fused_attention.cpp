// GptConfig::fused_attention (trainer/model/gpt.h): the attention core as
// one ATTENTION node, with ATTENTION_GRAD in the backward (ATTENTION_DROPOUT
// and its gradient with attention dropout). On a backend
// without a kernel for them (the cpu lists neither) the executor expands
// both into the chain's own ops (graph/ops/attention.cpp): in f32 a
// training step gives the unfused step's bits. In bf16 the expansion
// computes the core in f32 and rounds once (the op's definition), where the
// chain rounds its scores and probabilities to bf16, so the two agree to
// bf16's precision only.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/registry.h"
#include "graph/executor.h"
#include "graph/reference/reference.h"
#include "shared_device.h"
#include "trainer/attention_backend.h"
#include "trainer/model/gpt.h"
#include "trainer/model/step_graphs.h"

namespace kiln::trainer {
namespace {

GptConfig small(kiln_dtype dt, bool fused) {
  GptConfig c;
  c.num_layers = 2;
  c.hidden_size = 32;
  c.num_attention_heads = 4;
  c.vocab_size = 61;
  c.seq_length = 9;
  c.compute_dtype = dt;
  c.fused_attention = fused;
  return c;
}

graph::TensorMap inputs_of(const graph::Graph& g, int64_t vocab) {
  graph::TensorMap in;
  std::mt19937 gen(17);
  std::normal_distribution<float> normal(0.0f, 0.3f);
  for (const graph::Port& p : g.inputs()) {
    const graph::Value& v = g.value(p.value);
    graph::HostTensor t = graph::HostTensor::zeros(v.dtype, v.shape);
    if (v.dtype == KILN_I32)
      for (auto& x : t.i32) x = static_cast<int32_t>(gen() % static_cast<uint32_t>(vocab));
    else
      for (auto& x : t.f32) x = normal(gen) + (p.name.find("layernorm.weight") != std::string::npos ? 1.0f : 0.0f);
    in[p.name] = std::move(t);
  }
  return in;
}

// Every output port's bytes after one run on the cpu.
std::map<std::string, std::vector<uint8_t>> run_on_cpu(Device& cpu, const graph::Graph& g, const graph::TensorMap& in) {
  graph::Executable exe(cpu, g);
  for (const graph::Port& p : g.inputs()) {
    const graph::HostTensor& t = in.at(p.name);
    exe.buffer(p.name)->write(t.data(), t.bytes());
  }
  exe.run();
  std::map<std::string, std::vector<uint8_t>> out;
  for (const graph::Port& p : g.outputs()) {
    const graph::Value& v = g.value(p.value);
    std::vector<uint8_t> bytes(static_cast<size_t>(graph::numel(v.shape)) * kiln_dtype_size(v.dtype));
    exe.buffer(p.name)->read(bytes.data(), bytes.size());
    out[p.name] = std::move(bytes);
  }
  return out;
}

int count(const graph::Graph& g, kiln_op op) {
  int n = 0;
  for (const graph::Node& node : g.nodes()) n += node.op == op ? 1 : 0;
  return n;
}

TEST(FusedAttention, ATrainStepOnTheCpuGivesTheChainsBits) {
  std::unique_ptr<Device> cpu = Registry::instance().open("cpu", 0, 2);
  ASSERT_FALSE(cpu->plugin().supports(KILN_OP_ATTENTION));
  struct Run {
    kiln_dtype dt;
    float dropout;
  };
  for (const Run& r : {Run{KILN_F32, 0.0f}, Run{KILN_BF16, 0.0f}, Run{KILN_F32, 0.3f}}) {
    SCOPED_TRACE(std::string(kiln_dtype_name(r.dt)) + " attention dropout " + std::to_string(r.dropout));
    GptConfig unfused = small(r.dt, false), fused_config = small(r.dt, true);
    unfused.attention_dropout = fused_config.attention_dropout = r.dropout;
    const graph::Graph chain = build_train_step(unfused, 3);
    const graph::Graph fused = build_train_step(fused_config, 3);
    const kiln_op op = r.dropout > 0.0f ? KILN_OP_ATTENTION_DROPOUT : KILN_OP_ATTENTION;
    const kiln_op grad = r.dropout > 0.0f ? KILN_OP_ATTENTION_DROPOUT_GRAD : KILN_OP_ATTENTION_GRAD;
    EXPECT_EQ(count(fused, op), 2);
    EXPECT_EQ(count(fused, grad), 2);
    EXPECT_EQ(count(fused, KILN_OP_CAUSAL_SOFTMAX), 0);
    EXPECT_EQ(count(fused, KILN_OP_DROPOUT_KEYED), 0) << "the only dropout is the attention's";
    EXPECT_EQ(count(chain, op), 0);
    const graph::TensorMap in = inputs_of(chain, 61);
    const auto want = run_on_cpu(*cpu, chain, in);
    const auto got = run_on_cpu(*cpu, fused, in);
    ASSERT_EQ(want.size(), got.size());
    if (r.dt == KILN_F32) {
      for (const auto& [name, bytes] : want) EXPECT_EQ(got.at(name), bytes) << name << " differs";
      continue;
    }
    float a = 0.0f, b = 0.0f;
    std::memcpy(&a, want.at("loss").data(), 4);
    std::memcpy(&b, got.at("loss").data(), 4);
    EXPECT_NEAR(b, a, 4e-3 * std::abs(a)) << "bf16 loss";
  }
}

// Attention dropout is fused with the core (ATTENTION_DROPOUT); evaluation,
// which has none, uses ATTENTION. ALiBi, which biases the scores, keeps the
// chain.
TEST(FusedAttention, ALayerThatNeedsMoreThanTheCausalCoreKeepsTheChain) {
  GptConfig dropout = small(KILN_F32, true);
  dropout.attention_dropout = 0.1f;
  EXPECT_EQ(count(build_train_step(dropout, 2), KILN_OP_ATTENTION_DROPOUT), 2);
  EXPECT_EQ(count(build_train_step(dropout, 2), KILN_OP_CAUSAL_SOFTMAX), 0);
  EXPECT_EQ(count(build_train_step(dropout.without_dropout(), 2), KILN_OP_ATTENTION), 2);
  GptConfig alibi = small(KILN_F32, true);
  alibi.position_embedding_type = PositionEmbedding::Alibi;
  EXPECT_EQ(count(build_train_step(alibi, 2), KILN_OP_ATTENTION), 0);
  EXPECT_GT(count(build_train_step(alibi, 2), KILN_OP_CAUSAL_SOFTMAX), 0);
}

// --attention-backend (trainer/attention_backend.h) on real devices: the
// cpu lists no ATTENTION; Vulkan does, and on lavapipe (a CPU device) auto
// keeps the chain.
TEST(FusedAttention, TheAttentionBackendFlagChoosesByDeviceAndModel) {
  EXPECT_THROW(
      {
        try {
          parse_attention_backend("fuse");
        } catch (const Error& e) {
          EXPECT_STREQ(e.what(), "--attention-backend fuse is not one of auto, flash, fused, unfused, local");
          throw;
        }
      },
      Error);
  const GptConfig plain = small(KILN_F32, false);
  std::unique_ptr<Device> cpu = Registry::instance().open("cpu", 0, 2);
  AttentionChoice c = choose_attention(AttentionBackend::Flash, plain, *cpu);
  EXPECT_FALSE(c.fused);
  EXPECT_TRUE(c.warn) << "flash asked for and not had is a warning";
  EXPECT_FALSE(choose_attention(AttentionBackend::Auto, plain, *cpu).warn);
  std::string why;
  Device* vulkan = test::shared_device("vulkan", &why);
  if (vulkan == nullptr) GTEST_SKIP() << why;
  c = choose_attention(AttentionBackend::Fused, plain, *vulkan);
  EXPECT_TRUE(c.fused) << c.line;
  EXPECT_FALSE(c.warn);
  EXPECT_FALSE(choose_attention(AttentionBackend::Unfused, plain, *vulkan).fused);
  EXPECT_FALSE(choose_attention(AttentionBackend::Local, plain, *vulkan).fused);
  EXPECT_EQ(choose_attention(AttentionBackend::Auto, plain, *vulkan).fused,
            vulkan->properties().kind != KILN_DEVICE_CPU);
  GptConfig alibi = plain;
  alibi.position_embedding_type = PositionEmbedding::Alibi;
  c = choose_attention(AttentionBackend::Fused, alibi, *vulkan);
  EXPECT_FALSE(c.fused);
  EXPECT_TRUE(c.warn);
  EXPECT_NE(c.line.find("ALiBi"), std::string::npos) << c.line;
  // Attention dropout needs the op that carries the mask.
  GptConfig dropout = plain;
  dropout.attention_dropout = 0.1f;
  c = choose_attention(AttentionBackend::Fused, dropout, *vulkan);
  EXPECT_EQ(c.fused, vulkan->plugin().supports(KILN_OP_ATTENTION_DROPOUT)) << c.line;
  EXPECT_EQ(c.warn, !c.fused) << c.line;
}

// A head size no kernel plan fits (attention_plan.h on each backend: 1031
// is prime, so its row split is 1031 work items, more than a work group
// holds: 1024 on lavapipe, 256 in kiln's OpenCL kernels) is
// refused per node, and the node runs as its decomposition, the chain,
// instead of failing to compile. A head size that fits is claimed.
TEST(FusedAttention, AHeadSizeNoKernelFitsRunsAsTheChain) {
  for (const char* backend : {"vulkan", "opencl"}) {
    SCOPED_TRACE(backend);
    std::string why;
    Device* dev = test::shared_device(backend, &why);
    if (dev == nullptr) {
      std::printf("[ SKIPPED  ] %s: %s\n", backend, why.c_str());
      continue;
    }
    auto desc = [](int64_t d) { return TensorDesc{KILN_F32, {2, 5, d}}; };
    EXPECT_TRUE(dev->plugin().supports_node(KILN_OP_ATTENTION, {desc(64), desc(64), desc(64)}, {desc(64)}));
    EXPECT_FALSE(dev->plugin().supports_node(KILN_OP_ATTENTION, {desc(1031), desc(1031), desc(1031)}, {desc(1031)}));
    EXPECT_FALSE(dev->plugin().supports_node(KILN_OP_ATTENTION_GRAD, {desc(1031), desc(1031), desc(1031), desc(1031)},
                                             {desc(1031), desc(1031), desc(1031)}));
    graph::Graph g;
    const graph::ValueId q = g.input("q", KILN_F32, {2, 5, 1031});
    const graph::ValueId k = g.input("k", KILN_F32, {2, 5, 1031});
    const graph::ValueId v = g.input("v", KILN_F32, {2, 5, 1031});
    g.output("y", g.attention(q, k, v, 1.0f / std::sqrt(1031.0f)));
    const graph::TensorMap in = inputs_of(g, 1);
    graph::Executable exe(*dev, g);
    for (const char* name : {"q", "k", "v"}) exe.buffer(name)->write(in.at(name).data(), in.at(name).bytes());
    exe.run();
    graph::HostTensor got = graph::HostTensor::zeros(KILN_F32, {2, 5, 1031});
    exe.buffer("y")->read(got.data(), got.bytes());
    const graph::HostTensor want = graph::run_reference(g, in).at("y");
    for (size_t i = 0; i < got.f32.size(); ++i) ASSERT_NEAR(got.f32[i], want.f32[i], 1e-5f) << "element " << i;
  }
}

}  // namespace
}  // namespace kiln::trainer
