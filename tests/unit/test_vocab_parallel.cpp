// The vocab-parallel cross-entropy on the reference interpreter: each piece
// against hand arithmetic, then the whole point of the pieces -- logits cut
// into vocab shards, each shard's sums added, give CROSS_ENTROPY's loss and
// (through graph::backward) its gradient with respect to the full logits.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "graph/autodiff.h"
#include "graph/graph.h"
#include "graph/reference/reference.h"

namespace kiln::graph {
namespace {

HostTensor F(Shape s, std::vector<float> v) {
  HostTensor t = HostTensor::zeros(KILN_F32, std::move(s));
  EXPECT_EQ(t.f32.size(), v.size()) << "test tensor literal has the wrong size";
  t.f32 = std::move(v);
  return t;
}

HostTensor I(Shape s, std::vector<int32_t> v) {
  HostTensor t = HostTensor::zeros(KILN_I32, std::move(s));
  EXPECT_EQ(t.i32.size(), v.size()) << "test tensor literal has the wrong size";
  t.i32 = std::move(v);
  return t;
}

void expect_near(const std::vector<float>& got, const std::vector<double>& want, double tol = 1e-6) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], tol * std::max(1.0, std::abs(want[i]))) << "at element " << i;
}

// ------------------------------------------------------------ each piece by hand

TEST(ReferenceVocabParallel, RowMaxOverTheLastDim) {
  Graph g;
  g.output("y", g.row_max(g.input("x", KILN_F32, {2, 2, 3})));
  const float nan = std::nanf("");
  TensorMap out = run_reference(g, {{"x", F({2, 2, 3}, {1, 5, 2, -1, -3, -2, 0, nan, 1, INFINITY, 0, 0})}});
  const std::vector<float>& y = out.at("y").f32;
  ASSERT_EQ(out.at("y").shape, (Shape{2, 2}));
  EXPECT_EQ(y[0], 5.0f);
  EXPECT_EQ(y[1], -1.0f);
  EXPECT_TRUE(std::isnan(y[2])) << "a NaN in the row makes its max NaN, got " << y[2];
  EXPECT_EQ(y[3], INFINITY);
}

TEST(ReferenceVocabParallel, ShardSumsCountOnlyThisShardsTargets) {
  Graph g;
  ValueId l = g.input("l", KILN_F32, {3, 2}), t = g.input("t", KILN_I32, {3});
  g.output("y", g.cross_entropy_shard(l, t, g.input("m", KILN_F32, {3})));
  const float ln3 = static_cast<float>(std::log(3.0));
  // Row 2's max (3) lies in another shard. Targets: 0 is here; -1 and 2
  // (= V) belong to other shards and add nothing to the target term.
  TensorMap out =
      run_reference(g, {{"l", F({3, 2}, {0, ln3, 1, 1, 2, 0})}, {"t", I({3}, {0, -1, 2})}, {"m", F({3}, {ln3, 1, 3})}});
  EXPECT_EQ(out.at("y").shape, (Shape{3, 2}));
  expect_near(out.at("y").f32, {1.0 / 3 + 1, -std::log(3.0), 2, 0, std::exp(-1.0) + std::exp(-3.0), 0});
}

TEST(ReferenceVocabParallel, ShardGradByHand) {
  Graph g;
  ValueId l = g.input("l", KILN_F32, {3, 2}), t = g.input("t", KILN_I32, {3});
  ValueId m = g.input("m", KILN_F32, {3});
  g.output("y", g.cross_entropy_shard_grad(l, t, m, g.input("d", KILN_F32, {3, 2})));
  const float ln3 = static_cast<float>(std::log(3.0));
  TensorMap out = run_reference(g, {{"l", F({3, 2}, {0, ln3, 1, 1, 2, 0})},
                                    {"t", I({3}, {0, -1, 2})},
                                    {"m", F({3}, {ln3, 1, 3})},
                                    {"d", F({3, 2}, {2, -1, 0.5f, 7, 1, 3})}});
  // d0 exp(l - m), plus d1 at an in-range target only.
  expect_near(out.at("y").f32, {2.0 / 3 - 1, 2, 0.5, 0.5, std::exp(-1.0), std::exp(-3.0)});
}

TEST(ReferenceVocabParallel, LossFromSumsAndItsGrad) {
  const float e = static_cast<float>(std::exp(1.0));
  Graph g;
  ValueId s = g.input("s", KILN_F32, {2, 2});
  g.output("loss", g.cross_entropy_from_sums(s));
  g.output("ds", g.cross_entropy_from_sums_grad(s, g.input("d", KILN_F32, {1})));
  TensorMap out = run_reference(g, {{"s", F({2, 2}, {e, 0.5f, 1, -2})}, {"d", F({1}, {3})}});
  // Mean of (1 - 0.5) and (0 + 2).
  expect_near(out.at("loss").f32, {1.25});
  expect_near(out.at("ds").f32, {3 / (2 * std::exp(1.0)), -1.5, 1.5, -1.5});
}

TEST(ReferenceVocabParallel, AllReduceIsTheIdentityInAGroupOfOne) {
  Graph g;
  ValueId x = g.input("x", KILN_F32, {2, 3});
  g.output("sum", g.all_reduce(x, KILN_GROUP_TP));
  g.output("max", g.all_reduce(x, KILN_GROUP_TP, Graph::Reduction::Max));
  const HostTensor xv = F({2, 3}, {1, -2, 3.5f, 0, 7, -0.25f});
  TensorMap out = run_reference(g, {{"x", xv}});
  EXPECT_EQ(out.at("sum").f32, xv.f32);
  EXPECT_EQ(out.at("max").f32, xv.f32);
}

// ------------------------------------------------------------ shards add up to cross_entropy

struct Sharding {
  int64_t n, v;
  int shards;
  float lo, hi;  // logit range
};

class VocabShards {
 public:
  explicit VocabShards(const Sharding& s) : s_(s), gen_(static_cast<uint32_t>(s.n * 131 + s.v * 7 + s.shards)) {
    logits_ = HostTensor::zeros(KILN_F32, {s.n, s.v});
    std::uniform_real_distribution<float> u(s.lo, s.hi);
    for (float& x : logits_.f32) x = u(gen_);
    targets_ = HostTensor::zeros(KILN_I32, {s.n});
    for (int32_t& t : targets_.i32) t = static_cast<int32_t>(gen_() % static_cast<uint64_t>(s.v));
    // Row i < shards targets shard i, so each shard holds some targets and
    // (with more than one shard) misses others: both paths run.
    const int64_t width = s.v / s.shards;
    for (int64_t i = 0; i < std::min<int64_t>(s.n, s.shards); ++i)
      targets_.i32[static_cast<size_t>(i)] = static_cast<int32_t>(i * width + i % width);
  }

  // CROSS_ENTROPY on the full logits: the loss and d loss / d logits.
  TensorMap whole() const {
    Graph g;
    ValueId l = g.input("logits", KILN_F32, {s_.n, s_.v});
    ValueId loss = g.cross_entropy(l, g.input("targets", KILN_I32, {s_.n}));
    g.output("loss", loss);
    g.output("dlogits", backward(g, loss, {l})[0]);
    return run_reference(g, {{"logits", logits_}, {"targets", targets_}});
  }

  // The same from vocab shards: split along the vocab, one rowmax (the full
  // rows' max) for every shard, targets in each shard's local ids (those of
  // other shards fall outside [0, V/shards)), the shards' sums added as the
  // group's all-reduce would. `collectives`: with one shard, put in the
  // all-reduces a real group runs (the identity in a group of one).
  TensorMap sharded(bool collectives = false) const {
    const int64_t width = s_.v / s_.shards;
    Graph g;
    TensorMap in{{"logits", logits_}};
    ValueId l = g.input("logits", KILN_F32, {s_.n, s_.v});
    ValueId mx = g.row_max(l);
    if (collectives) mx = g.all_reduce(mx, KILN_GROUP_TP, Graph::Reduction::Max);
    std::vector<ValueId> parts = s_.shards == 1 ? std::vector<ValueId>{l} : g.split(l, 1, s_.shards);
    ValueId sums = -1;
    for (int s = 0; s < s_.shards; ++s) {
      const std::string name = "targets" + std::to_string(s);
      HostTensor local = targets_;
      for (int32_t& t : local.i32) t -= static_cast<int32_t>(s * width);
      in[name] = local;
      ValueId part = g.cross_entropy_shard(parts[static_cast<size_t>(s)], g.input(name, KILN_I32, {s_.n}), mx);
      sums = s == 0 ? part : g.add(sums, part);
    }
    if (collectives) sums = g.all_reduce(sums, KILN_GROUP_TP);
    ValueId loss = g.cross_entropy_from_sums(sums);
    g.output("loss", loss);
    g.output("dlogits", backward(g, loss, {l})[0]);
    return run_reference(g, in);
  }

 private:
  Sharding s_;
  std::mt19937 gen_;
  HostTensor logits_, targets_;
};

void expect_same_loss_and_grad(const TensorMap& want, const TensorMap& got) {
  const double loss = want.at("loss").f32[0];
  EXPECT_NEAR(got.at("loss").f32[0], loss, 1e-6 * std::abs(loss)) << "loss";
  const std::vector<float>& dw = want.at("dlogits").f32;
  const std::vector<float>& dg = got.at("dlogits").f32;
  ASSERT_EQ(dg.size(), dw.size());
  double peak = 0;
  for (float d : dw) peak = std::max(peak, static_cast<double>(std::abs(d)));
  ASSERT_GT(peak, 0.0);
  for (size_t k = 0; k < dw.size(); ++k) EXPECT_NEAR(dg[k], dw[k], 1e-6 * peak) << "dlogits element " << k;
}

TEST(ReferenceVocabParallel, ShardsAddUpToCrossEntropyAndItsGradient) {
  for (Sharding s : {Sharding{6, 10, 2, -4, 4}, Sharding{5, 38, 2, -6, 6}, Sharding{17, 42, 3, -6, 6},
                     Sharding{9, 64, 2, 4980, 5020}, Sharding{9, 64, 2, -500, 500}, Sharding{5, 37, 1, -6, 6}}) {
    SCOPED_TRACE("N=" + std::to_string(s.n) + " V=" + std::to_string(s.v) + " in " + std::to_string(s.shards) +
                 " shards, logits in [" + std::to_string(s.lo) + ", " + std::to_string(s.hi) + ")");
    VocabShards v(s);
    expect_same_loss_and_grad(v.whole(), v.sharded());
  }
}

TEST(ReferenceVocabParallel, GroupOfOneWithCollectivesIsCrossEntropy) {
  VocabShards v({7, 33, 1, -6, 6});
  expect_same_loss_and_grad(v.whole(), v.sharded(/*collectives=*/true));
}

}  // namespace
}  // namespace kiln::graph
