// The op table (kiln/ops.h) and the shared shape rules (kiln/op_rules.hpp):
// the table is well formed, and the rules infer, and refuse, what each op's
// definition says, for the host builder and a plugin's decoded graph alike.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>

#include "kiln/op_rules.hpp"

namespace {

using kiln::ir::check_graph;
using kiln::ir::Dims;
using kiln::ir::infer;
using kiln::ir::TensorType;

TensorType f32(Dims d) { return {KILN_F32, std::move(d)}; }
TensorType i32(Dims d) { return {KILN_I32, std::move(d)}; }

// infer() with no output shapes given; returns the error, "" on success.
std::string run(kiln_op op, const std::vector<TensorType>& in, std::vector<TensorType>* out,
                const std::vector<int64_t>& ia = {}, const std::vector<float>& fa = {},
                const std::vector<Dims>& given = {}) {
  return infer(op, in, ia, fa, given, out);
}

TEST(OpTable, NamesAreUniqueLowercaseIdentifiers) {
  std::set<std::string> names;
  for (const kiln_op_info& row : kiln_op_table) {
    const std::string name = row.name;
    ASSERT_FALSE(name.empty());
    for (char c : name) EXPECT_TRUE((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_') << name;
    EXPECT_TRUE(names.insert(name).second) << "duplicate op name " << name;
    EXPECT_STREQ(kiln_op_name(row.code), row.name);
  }
  EXPECT_STREQ(kiln_op_name(KILN_OP_COUNT_), "unknown");
  EXPECT_STREQ(kiln_op_name(-1), "unknown");
}

TEST(OpTable, SignaturesNameEveryTensorWithAKnownDtype) {
  for (const kiln_op_info& row : kiln_op_table) {
    bool repeats = false;
    auto ins = kiln::ir::rules_detail::parse_signature(row.inputs, &repeats);
    EXPECT_EQ(repeats, row.num_inputs == KILN_OP_ANY) << row.name;
    if (row.num_inputs != KILN_OP_ANY) {
      EXPECT_EQ(static_cast<int>(ins.size()), row.num_inputs) << row.name;
    }
    for (const auto& p : ins) EXPECT_NE(std::string("fFi*").find(p.dtype), std::string::npos) << row.name;
    auto outs = kiln::ir::rules_detail::parse_signature(row.outputs, &repeats);
    EXPECT_EQ(repeats, row.num_outputs == KILN_OP_ANY) << row.name;
    for (const auto& p : outs) EXPECT_NE(std::string("fFi=t").find(p.dtype), std::string::npos) << row.name;
  }
}

TEST(OpTable, PropertiesAreConsistent) {
  for (const kiln_op_info& row : kiln_op_table) {
    // Layout ops move bytes exactly, so they must be compared exactly.
    if (row.properties & KILN_OPP_LAYOUT) {
      EXPECT_EQ(row.tolerance, KILN_TOL_EXACT) << row.name;
    }
    // An in-place op must read element k before writing it.
    if (row.properties & KILN_OPP_IN_PLACE) {
      EXPECT_TRUE(row.properties & KILN_OPP_ELEMENTWISE) << row.name;
    }
  }
  EXPECT_TRUE(kiln_op_has(KILN_OP_ALL_REDUCE, KILN_OPP_HOST_COLLECTIVE));
  EXPECT_FALSE(kiln_op_has(KILN_OP_MATMUL, KILN_OPP_HOST_COLLECTIVE));
  EXPECT_FALSE(kiln_op_has(KILN_OP_COUNT_, KILN_OPP_ELEMENTWISE));
}

TEST(OpRules, InferMatmulWithTransposes) {
  std::vector<TensorType> out;
  ASSERT_EQ(run(KILN_OP_MATMUL, {f32({2, 3, 4}), f32({2, 5, 4})}, &out, {0, 1}), "");
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0], f32({2, 3, 5}));
  EXPECT_EQ(run(KILN_OP_MATMUL, {f32({3, 4}), f32({5, 6})}, &out, {0, 0}), "inner dims differ: [3, 4] @ [5, 6]");
  EXPECT_EQ(run(KILN_OP_MATMUL, {f32({3, 4}), f32({4, 6})}, &out), "expects 2 int attributes, got 0");
}

TEST(OpRules, NormGradientsCoverEveryForwardParameter) {
  std::vector<TensorType> out;
  // LayerNorm's backward reads gamma but also yields dbeta.
  ASSERT_EQ(run(KILN_OP_LAYERNORM_GRAD, {f32({4, 8}), f32({8}), f32({4, 8})}, &out, {}, {1e-5f}), "");
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0], f32({4, 8}));
  EXPECT_EQ(out[1], f32({8}));
  EXPECT_EQ(out[2], f32({8}));
  EXPECT_EQ(run(KILN_OP_LAYERNORM, {f32({4, 8}), f32({8}), f32({7})}, &out, {}, {1e-5f}), "beta must be [8], got [7]");
}

TEST(OpRules, ErrorsNameTheSignatureInput) {
  std::vector<TensorType> out;
  EXPECT_EQ(run(KILN_OP_CROSS_ENTROPY, {f32({3, 5}), f32({3})}, &out), "targets must be i32, got f32");
  EXPECT_EQ(run(KILN_OP_CROSS_ENTROPY_SHARD, {f32({3, 5}), i32({3}), f32({5})}, &out), "rowmax must be [3], got [5]");
  EXPECT_EQ(run(KILN_OP_ROW_MAX, {f32({7})}, &out), "x must have rank >= 2, got [7]");
  EXPECT_EQ(run(KILN_OP_ADD, {f32({2, 3})}, &out), "expects 2 inputs, got 1");
  EXPECT_EQ(run(KILN_OP_GELU, {f32({2, 0})}, &out), "x has a non-positive dim in [2, 0]");
}

TEST(OpRules, LayoutOpsKeepTheDtype) {
  std::vector<TensorType> out;
  ASSERT_EQ(run(KILN_OP_SPLIT, {i32({6, 4})}, &out, {0, 3}), "");
  ASSERT_EQ(out.size(), 3u);
  for (const auto& t : out) EXPECT_EQ(t, i32({2, 4}));
  ASSERT_EQ(run(KILN_OP_RESHAPE, {i32({6, 4})}, &out, {}, {}, {{24}}), "");
  EXPECT_EQ(out[0], i32({24}));
  EXPECT_EQ(run(KILN_OP_RESHAPE, {f32({6, 4})}, &out, {}, {}, {{25}}), "cannot reshape [6, 4] to [25]");
  EXPECT_EQ(run(KILN_OP_CONCAT, {f32({2, 3}), i32({2, 3})}, &out, {1}), "inputs have different dtypes");
  EXPECT_EQ(run(KILN_OP_PERMUTE, {f32({2, 3})}, &out, {0, 0}), "perm is not a permutation");
}

TEST(OpRules, SequenceParallelCollectivesScaleTheirAxis) {
  std::vector<TensorType> out;
  ASSERT_EQ(run(KILN_OP_ALL_GATHER, {f32({2, 3, 4})}, &out, {1, 2, KILN_GROUP_TP}), "");
  EXPECT_EQ(out[0], f32({2, 6, 4}));
  ASSERT_EQ(run(KILN_OP_REDUCE_SCATTER, {f32({2, 6, 4})}, &out, {1, 2, KILN_GROUP_TP}), "");
  EXPECT_EQ(out[0], f32({2, 3, 4}));
  ASSERT_EQ(run(KILN_OP_SCATTER, {f32({2, 6, 4})}, &out, {1, 3, KILN_GROUP_TP}), "");
  EXPECT_EQ(out[0], f32({2, 2, 4}));
  EXPECT_EQ(run(KILN_OP_REDUCE_SCATTER, {f32({2, 5, 4})}, &out, {1, 2, KILN_GROUP_TP}),
            "dim 5 is not divisible into 2 parts");
  EXPECT_EQ(run(KILN_OP_ALL_GATHER, {f32({2, 5})}, &out, {2, 2, KILN_GROUP_TP}), "axis out of range");
  EXPECT_EQ(run(KILN_OP_SCATTER, {f32({4})}, &out, {0, 0, KILN_GROUP_TP}), "ranks must be in [1, 65536], got 0");
  EXPECT_NE(run(KILN_OP_ALL_GATHER, {i32({4})}, &out, {0, 2, KILN_GROUP_TP}), "");  // f32 only, as ALL_REDUCE
  // The last attribute names the process group (kiln_group).
  EXPECT_EQ(run(KILN_OP_ALL_GATHER, {f32({2, 3, 4})}, &out, {1, 2, 5}),
            "process group 5 is not a kiln_group (0 tp ... 4 pp)");
  EXPECT_EQ(run(KILN_OP_ALL_REDUCE, {f32({4})}, &out, {0, -1}), "process group -1 is not a kiln_group (0 tp ... 4 pp)");
  ASSERT_EQ(run(KILN_OP_ALL_REDUCE, {f32({4})}, &out, {1, KILN_GROUP_DP}), "");
  EXPECT_STREQ(kiln_group_name(KILN_GROUP_CP), "cp");
  EXPECT_EQ(kiln_group_name(KILN_GROUP_COUNT_), nullptr);
  for (kiln_op op : {KILN_OP_ALL_GATHER, KILN_OP_REDUCE_SCATTER, KILN_OP_SCATTER})
    EXPECT_TRUE(kiln_op_has(op, KILN_OPP_HOST_COLLECTIVE)) << kiln_op_name(op);
}

TEST(OpRules, EmbeddingGradBoundsTheVocab) {
  std::vector<TensorType> out;
  EXPECT_EQ(run(KILN_OP_EMBEDDING_GRAD, {f32({4, 8}), i32({4})}, &out, {0}), "vocab must be positive");
  EXPECT_EQ(run(KILN_OP_EMBEDDING_GRAD, {f32({4, 8}), i32({4})}, &out, {int64_t{1} << 32}), "vocab too large");
  ASSERT_EQ(run(KILN_OP_EMBEDDING_GRAD, {f32({4, 8}), i32({4})}, &out, {50}), "");
  EXPECT_EQ(out[0], f32({50, 8}));
}

TEST(OpRules, RopeRotatesPairsOfTheLastDimByPosition) {
  std::vector<TensorType> out;
  // q as the model passes it, [B*H, T, D], with half the features rotated.
  ASSERT_EQ(run(KILN_OP_ROPE, {f32({8, 5, 6}), f32({5, 3}), f32({5, 3})}, &out, {0}), "");
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0], f32({8, 5, 6}));
  ASSERT_EQ(run(KILN_OP_ROPE_GRAD, {f32({5, 10}), f32({5, 2}), f32({5, 2})}, &out, {1}), "");
  EXPECT_EQ(out[0], f32({5, 10}));
  // Odd D with partial rotation: 2R = 8 <= 9.
  EXPECT_EQ(run(KILN_OP_ROPE, {f32({2, 9}), f32({2, 4}), f32({2, 4})}, &out, {0}), "");
}

TEST(OpRules, RopeRefusesWhatItCannotRotate) {
  std::vector<TensorType> out;
  EXPECT_EQ(run(KILN_OP_ROPE, {f32({6}), f32({1, 3}), f32({1, 3})}, &out, {0}), "x must be [..., T, D], got [6]");
  EXPECT_EQ(run(KILN_OP_ROPE_GRAD, {f32({6}), f32({1, 3}), f32({1, 3})}, &out, {0}), "dy must be [..., T, D], got [6]");
  EXPECT_EQ(run(KILN_OP_ROPE, {f32({4, 6}), f32({4, 3, 1}), f32({4, 3, 1})}, &out, {0}),
            "cos must be [T, R], got [4, 3, 1]");
  EXPECT_EQ(run(KILN_OP_ROPE, {f32({4, 6}), f32({4, 3}), f32({4, 2})}, &out, {0}),
            "sin [4, 2] differs from cos [4, 3]");
  EXPECT_EQ(run(KILN_OP_ROPE, {f32({2, 4, 6}), f32({5, 3}), f32({5, 3})}, &out, {0}),
            "cos [5, 3] has 5 positions, x [2, 4, 6] has T = 4");
  EXPECT_EQ(run(KILN_OP_ROPE, {f32({4, 6}), f32({4, 4}), f32({4, 4})}, &out, {0}),
            "cos [4, 4] rotates 2R = 8 features, x [4, 6] has D = 6");
  EXPECT_EQ(run(KILN_OP_ROPE, {f32({4, 6}), f32({4, 3}), f32({4, 3})}, &out, {2}), "interleaved must be 0 or 1, got 2");
  EXPECT_EQ(run(KILN_OP_ROPE, {f32({4, 6}), f32({4, 3}), f32({4, 3})}, &out), "expects 1 int attributes, got 0");
}

TEST(OpRules, AlibiNeedsSquareScoresAndOneSlopePerHead) {
  std::vector<TensorType> out;
  ASSERT_EQ(run(KILN_OP_ALIBI, {f32({2, 3, 5, 5}), f32({3})}, &out), "");
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0], f32({2, 3, 5, 5}));
  ASSERT_EQ(run(KILN_OP_ALIBI, {f32({1, 1, 1}), f32({1})}, &out), "");
  EXPECT_EQ(out[0], f32({1, 1, 1}));
  EXPECT_EQ(run(KILN_OP_ALIBI, {f32({5, 5}), f32({1})}, &out), "x must be [..., H, T, T], got [5, 5]");
  EXPECT_EQ(run(KILN_OP_ALIBI, {f32({3, 5, 4}), f32({3})}, &out), "x must be [..., H, T, T], got [3, 5, 4]");
  EXPECT_EQ(run(KILN_OP_ALIBI, {f32({2, 3, 5, 5}), f32({2})}, &out), "slopes must be [3], got [2]");
  EXPECT_EQ(run(KILN_OP_ALIBI, {f32({3, 5, 5}), f32({1, 3})}, &out), "slopes must be [3], got [1, 3]");
  EXPECT_EQ(run(KILN_OP_ALIBI, {f32({3, 5, 5}), i32({3})}, &out), "slopes must be f32, got i32");
}

// A decoded graph as a plugin receives it: one node whose declared outputs
// must be exactly what the rule infers.
TEST(OpRules, DropoutKeepsTheShapeAndChecksItsAttributes) {
  std::vector<TensorType> out;
  const std::vector<TensorType> in{f32({3, 5}), i32({4})};
  ASSERT_EQ(run(KILN_OP_DROPOUT, in, &out, {7, 15, 15}, {0.1f}), "");
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0], f32({3, 5}));
  // A column block of a wider tensor, and p = 0 (the identity).
  EXPECT_EQ(run(KILN_OP_DROPOUT, in, &out, {0, 5, 20}, {0.0f}), "");
  EXPECT_EQ(run(KILN_OP_DROPOUT, {f32({3, 5}), i32({2})}, &out, {0, 15, 15}, {0.1f}), "key must be [4], got [2]");
  EXPECT_EQ(run(KILN_OP_DROPOUT, {f32({3, 5}), f32({4})}, &out, {0, 15, 15}, {0.1f}), "key must be i32, got f32");
  EXPECT_EQ(run(KILN_OP_DROPOUT, in, &out, {0, 15, 15}, {1.0f}), "p must be in [0, 1), got 1.000000");
  EXPECT_EQ(run(KILN_OP_DROPOUT, in, &out, {0, 15, 15}, {-0.5f}), "p must be in [0, 1), got -0.500000");
  EXPECT_EQ(run(KILN_OP_DROPOUT, in, &out, {0, 15, 15}, {std::nanf("")}), "p must be in [0, 1), got nan");
  EXPECT_EQ(run(KILN_OP_DROPOUT, in, &out, {-1, 15, 15}, {0.1f}), "site must be in [0, 2^32), got -1");
  EXPECT_EQ(run(KILN_OP_DROPOUT, in, &out, {int64_t{1} << 32, 15, 15}, {0.1f}),
            "site must be in [0, 2^32), got 4294967296");
  EXPECT_EQ(run(KILN_OP_DROPOUT, in, &out, {0, 0, 15}, {0.1f}), "period must be >= 1, got 0");
  EXPECT_EQ(run(KILN_OP_DROPOUT, in, &out, {0, 15, 0}, {0.1f}), "stride must be >= period 15, got 0");
  EXPECT_EQ(run(KILN_OP_DROPOUT, in, &out, {0, 15}, {0.1f}), "expects 3 int attributes, got 2");
  EXPECT_EQ(run(KILN_OP_DROPOUT, in, &out, {0, 15, 15}), "expects 1 float attributes, got 0");
}

// The keyed form: a key of 5 words (the site last), period and stride only.
TEST(OpRules, KeyedDropoutTakesItsSiteFromAFiveWordKey) {
  std::vector<TensorType> out;
  const std::vector<TensorType> in{f32({3, 5}), i32({5})};
  ASSERT_EQ(run(KILN_OP_DROPOUT_KEYED, in, &out, {15, 15}, {0.1f}), "");
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0], f32({3, 5}));
  EXPECT_EQ(run(KILN_OP_DROPOUT_KEYED, in, &out, {5, 20}, {0.0f}), "");
  EXPECT_EQ(run(KILN_OP_DROPOUT_KEYED, {f32({3, 5}), i32({4})}, &out, {15, 15}, {0.1f}), "key must be [5], got [4]");
  EXPECT_EQ(run(KILN_OP_DROPOUT_KEYED, in, &out, {15, 15}, {1.0f}), "p must be in [0, 1), got 1.000000");
  EXPECT_EQ(run(KILN_OP_DROPOUT_KEYED, in, &out, {0, 15}, {0.1f}), "period must be >= 1, got 0");
  EXPECT_EQ(run(KILN_OP_DROPOUT_KEYED, in, &out, {15, 0}, {0.1f}), "stride must be >= period 15, got 0");
  EXPECT_EQ(run(KILN_OP_DROPOUT_KEYED, in, &out, {7, 15, 15}, {0.1f}), "expects 2 int attributes, got 3");
}

kiln::ir::DecodedGraph one_matmul(Dims y) {
  kiln::ir::DecodedGraph g;
  g.num_slots = 4;
  auto value = [&](Dims d, uint32_t slot) {
    kiln::ir::DecodedValue v;
    v.dims = std::move(d);
    v.slot = slot;
    g.values.push_back(v);
    return static_cast<uint32_t>(g.values.size() - 1);
  };
  kiln::ir::DecodedNode n;
  n.op = KILN_OP_MATMUL;
  n.inputs = {value({3, 4}, 1), value({4, 6}, 2)};
  n.outputs = {value(std::move(y), 3)};
  n.iattrs = {0, 0};
  g.nodes.push_back(n);
  return g;
}

TEST(OpRules, CheckGraphComparesDeclaredOutputs) {
  EXPECT_EQ(check_graph(one_matmul({3, 6})), "");
  EXPECT_EQ(check_graph(one_matmul({3, 5})), "node 0 (matmul): output 0 is f32 [3, 5], expected f32 [3, 6]");
  auto g = one_matmul({3, 6});
  g.values[0].offset = 2;
  EXPECT_EQ(check_graph(g), "value 0 is at an unaligned offset 2");
  g = one_matmul({3, 6});
  g.nodes[0].outputs.push_back(g.nodes[0].outputs[0]);
  EXPECT_EQ(check_graph(g), "node 0 (matmul): expects 1 outputs, got 2");
}

}  // namespace

namespace {

TensorType bf16(Dims d) { return {KILN_BF16, std::move(d)}; }
TensorType f16(Dims d) { return {KILN_F16, std::move(d)}; }

TEST(OpRules, FloatOpsKeepTheirInputsLowPrecisionDtype) {
  std::vector<TensorType> out;
  ASSERT_EQ(run(KILN_OP_MATMUL, {bf16({3, 4}), bf16({4, 5})}, &out, {0, 0}), "");
  EXPECT_EQ(out[0], bf16({3, 5}));
  ASSERT_EQ(run(KILN_OP_LAYERNORM_GRAD, {f16({4, 8}), f16({8}), f16({4, 8})}, &out, {}, {1e-5f}), "");
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(out[i].dtype, KILN_F16);
  ASSERT_EQ(run(KILN_OP_EMBEDDING, {bf16({10, 4}), i32({3})}, &out), "");
  EXPECT_EQ(out[0], bf16({3, 4}));
}

TEST(OpRules, ReductionsThatStayFp32SayF32) {
  std::vector<TensorType> out;
  // A loss and a sum of squares are fp32 whatever their input stores.
  ASSERT_EQ(run(KILN_OP_CROSS_ENTROPY, {bf16({3, 5}), i32({3})}, &out), "");
  EXPECT_EQ(out[0], f32({1}));
  ASSERT_EQ(run(KILN_OP_SUM_SQUARES, {f16({7})}, &out), "");
  EXPECT_EQ(out[0], f32({1}));
  ASSERT_EQ(run(KILN_OP_CROSS_ENTROPY_GRAD, {bf16({3, 5}), i32({3}), f32({1})}, &out), "");
  EXPECT_EQ(out[0], bf16({3, 5}));
  ASSERT_EQ(run(KILN_OP_CROSS_ENTROPY_SHARD, {f16({3, 5}), i32({3}), f16({3})}, &out), "");
  EXPECT_EQ(out[0], f32({3, 2}));
}

TEST(OpRules, DtypeErrorsNameTheInputAndBothDtypes) {
  std::vector<TensorType> out;
  EXPECT_EQ(run(KILN_OP_ADD, {f32({2, 3}), bf16({3})}, &out),
            "b is bf16 but a is f32: an op's float inputs share one dtype (cast one of them)");
  EXPECT_EQ(run(KILN_OP_MATMUL, {f16({3, 4}), bf16({4, 5})}, &out, {0, 0}),
            "b is bf16 but a is f16: an op's float inputs share one dtype (cast one of them)");
  // f32-only inputs: optimizer state and host tables.
  EXPECT_EQ(run(KILN_OP_ADAMW, {bf16({4}), f32({4}), f32({4}), f32({4}), f32({5})}, &out, {1}, {0.9f, 0.95f, 1e-8f}),
            "param must be f32, got bf16");
  EXPECT_EQ(run(KILN_OP_ROPE, {bf16({2, 4, 8}), bf16({4, 2}), f32({4, 2})}, &out, {0}), "cos must be f32, got bf16");
  EXPECT_EQ(run(KILN_OP_CROSS_ENTROPY_GRAD, {bf16({3, 5}), i32({3}), bf16({1})}, &out), "dloss must be f32, got bf16");
  EXPECT_EQ(run(KILN_OP_GELU, {i32({2})}, &out), "x must be a float (f32, bf16, f16), got i32");
  // Tables in f32 beside bf16 activations are fine: 'F' is not the node's float dtype.
  ASSERT_EQ(run(KILN_OP_ROPE, {bf16({2, 4, 8}), f32({4, 2}), f32({4, 2})}, &out, {0}), "");
  EXPECT_EQ(out[0], bf16({2, 4, 8}));
}

TEST(OpRules, AdamwClipTakesA16BitGradientAndOneClipFactor) {
  std::vector<TensorType> out;
  const std::vector<int64_t> wd = {1};
  const std::vector<float> betas = {0.9f, 0.95f, 1e-8f};
  ASSERT_EQ(run(KILN_OP_ADAMW_CLIP, {f32({4}), bf16({4}), f32({4}), f32({4}), f32({5}), f32({1})}, &out, wd, betas),
            "");
  EXPECT_EQ(out, (std::vector<TensorType>{f32({4}), f32({4}), f32({4})}));
  EXPECT_EQ(run(KILN_OP_ADAMW_CLIP, {f32({4}), bf16({4}), f32({4}), f32({4}), f32({5}), f32({2})}, &out, wd, betas),
            "clip must be [1], got [2]");
  EXPECT_EQ(run(KILN_OP_ADAMW_CLIP, {f32({4}), bf16({4}), bf16({4}), f32({4}), f32({5}), f32({1})}, &out, wd, betas),
            "m must be f32, got bf16");
  EXPECT_EQ(run(KILN_OP_ADAMW_CLIP, {f32({4}), f16({3}), f32({4}), f32({4}), f32({5}), f32({1})}, &out, wd, betas),
            "grad [3] differs from param [4]");
}

TEST(OpRules, CastGoesBetweenFloatDtypes) {
  std::vector<TensorType> out;
  ASSERT_EQ(run(KILN_OP_CAST, {f32({2, 3})}, &out, {KILN_BF16}), "");
  EXPECT_EQ(out[0], bf16({2, 3}));
  ASSERT_EQ(run(KILN_OP_CAST, {bf16({2, 3})}, &out, {KILN_F16}), "");
  EXPECT_EQ(out[0], f16({2, 3}));
  ASSERT_EQ(run(KILN_OP_CAST, {f16({5})}, &out, {KILN_F32}), "");
  EXPECT_EQ(out[0], f32({5}));
  EXPECT_EQ(run(KILN_OP_CAST, {f32({5})}, &out, {KILN_I32}),
            "target dtype must be a float dtype (0 f32, 2 bf16, 3 f16), got 1");
  EXPECT_EQ(run(KILN_OP_CAST, {f32({5})}, &out, {99}),
            "target dtype must be a float dtype (0 f32, 2 bf16, 3 f16), got 99");
  EXPECT_EQ(run(KILN_OP_CAST, {i32({5})}, &out, {KILN_F32}), "x must be a float (f32, bf16, f16), got i32");
}

TEST(OpRules, LayoutOpsMoveLowPrecisionValues) {
  std::vector<TensorType> out;
  ASSERT_EQ(run(KILN_OP_PERMUTE, {bf16({2, 3})}, &out, {1, 0}), "");
  EXPECT_EQ(out[0], bf16({3, 2}));
  EXPECT_EQ(run(KILN_OP_CONCAT, {bf16({2, 3}), f16({2, 3})}, &out, {1}), "inputs have different dtypes");
}

TEST(OpRules, CheckGraphWantsEachValueAlignedToItsElementSize) {
  kiln::ir::DecodedGraph g;
  g.num_slots = 2;
  g.values.push_back({KILN_BF16, {3}, 1, 2, -1});
  g.values.push_back({KILN_F32, {3}, 1, 64, 0});
  g.nodes.push_back({KILN_OP_CAST, {0}, {1}, {KILN_F32}, {}});
  EXPECT_EQ(check_graph(g), "");
  g.values[1].offset = 66;
  EXPECT_EQ(check_graph(g), "value 1 is at an unaligned offset 66");
}

}  // namespace
