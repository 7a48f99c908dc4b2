// Finite-difference gradient checks of autodiff's rules on the reference
// interpreter: for every differentiable op, the gradient backward() builds
// must match central differences of the forward graph's loss. Also checks
// accumulation over several consumers, pruning, zero gradients for values
// the loss does not read, and backward()'s errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"
#include "graph/autodiff.h"
#include "graph/graph.h"
#include "graph/reference/reference.h"

namespace kiln::graph {
namespace {

// A graph under test, its input data, and the check itself.
class GradCheck {
 public:
  explicit GradCheck(unsigned seed = 1) : rng_(seed) {}

  Graph g;
  TensorMap inputs;

  // An f32 input filled with uniform values in [lo, hi).
  ValueId input(const std::string& name, const Shape& shape, double lo = -1.0, double hi = 1.0) {
    ValueId v = g.input(name, KILN_F32, shape);
    HostTensor t = HostTensor::zeros(KILN_F32, shape);
    std::uniform_real_distribution<double> u(lo, hi);
    for (float& x : t.f32) x = static_cast<float>(u(rng_));
    inputs[name] = t;
    return v;
  }

  ValueId ids(const std::string& name, const Shape& shape, std::vector<int32_t> data) {
    ValueId v = g.input(name, KILN_I32, shape);
    HostTensor t = HostTensor::zeros(KILN_I32, shape);
    t.i32 = std::move(data);
    inputs[name] = t;
    return v;
  }

  // loss = sum(y * W) with fixed random weights W: a linear read-out, so
  // dloss/dy = W exactly and the check measures only y's own curvature.
  ValueId weighted_sum(ValueId y) {
    Shape s = g.shape(y);
    ValueId w = input("readout_" + std::to_string(readouts_++), s);
    ValueId col = g.reshape(g.mul(y, w), {numel(s), 1});
    return g.sum_to(col, {1});
  }

  // Compares backward()'s gradients of `loss` for the named f32 inputs with
  // central differences. Passes if, per input, the relative L2 error is at
  // most `tol` and no element is off by more than 3 tol * max |numeric|.
  void check(ValueId loss, const std::vector<std::string>& wrt, double eps = 1e-2, double tol = 1e-2) {
    Graph fwd = g;
    fwd.output("loss", loss);
    Graph bwd = g;
    std::vector<ValueId> ids;
    for (const auto& name : wrt) ids.push_back(bwd.find_input(name)->value);
    std::vector<ValueId> grads = backward(bwd, loss, ids);
    ASSERT_EQ(grads.size(), wrt.size());
    for (size_t i = 0; i < wrt.size(); ++i) bwd.output("d_" + wrt[i], grads[i]);
    TensorMap analytic = run_reference(bwd, inputs);

    TensorMap probe = inputs;
    auto loss_at = [&]() { return static_cast<double>(run_reference(fwd, probe).at("loss").f32[0]); };
    for (const auto& name : wrt) {
      SCOPED_TRACE("d loss / d " + name);
      const HostTensor& a = analytic.at("d_" + name);
      ASSERT_EQ(a.shape, inputs.at(name).shape);
      std::vector<float>& x = probe.at(name).f32;
      std::vector<double> numeric(x.size());
      for (size_t k = 0; k < x.size(); ++k) {
        float saved = x[k];
        x[k] = static_cast<float>(saved + eps);
        double plus = loss_at();
        x[k] = static_cast<float>(saved - eps);
        double minus = loss_at();
        x[k] = saved;
        numeric[k] = (plus - minus) / (2 * eps);
      }
      double diff2 = 0, norm2 = 0, peak = 0;
      for (size_t k = 0; k < x.size(); ++k) {
        diff2 += (a.f32[k] - numeric[k]) * (a.f32[k] - numeric[k]);
        norm2 += numeric[k] * numeric[k];
        peak = std::max(peak, std::abs(numeric[k]));
      }
      ASSERT_GT(peak, 1e-4) << "degenerate check: the numeric gradient is ~0";
      EXPECT_LE(std::sqrt(diff2 / norm2), tol) << "relative L2 error too large";
      for (size_t k = 0; k < x.size(); ++k) EXPECT_NEAR(a.f32[k], numeric[k], 3 * tol * peak) << "element " << k;
    }
  }

 private:
  std::mt19937 rng_;
  int readouts_ = 0;
};

// ------------------------------------------------------------ elementwise

TEST(GradCheck, AddSameShape) {
  GradCheck c;
  ValueId a = c.input("a", {3, 5});
  ValueId b = c.input("b", {3, 5});
  c.check(c.weighted_sum(c.g.add(a, b)), {"a", "b"});
}

TEST(GradCheck, AddBroadcastSuffix) {
  GradCheck c;
  ValueId a = c.input("a", {4, 3, 5});
  ValueId bias = c.input("bias", {5});
  ValueId plane = c.input("plane", {3, 5});
  c.check(c.weighted_sum(c.g.add(c.g.add(a, bias), plane)), {"a", "bias", "plane"});
}

TEST(GradCheck, MulSameShapeAndBroadcast) {
  GradCheck c;
  ValueId a = c.input("a", {2, 3, 5});
  ValueId b = c.input("b", {2, 3, 5});
  ValueId s = c.input("s", {3, 5});
  c.check(c.weighted_sum(c.g.mul(c.g.mul(a, b), s)), {"a", "b", "s"});
}

TEST(GradCheck, MulSameValueTwiceAccumulates) {
  GradCheck c;
  ValueId x = c.input("x", {7});
  ValueId y = c.g.mul(x, x);
  ValueId loss = c.weighted_sum(y);
  c.check(loss, {"x"});
  // And exactly: d/dx sum(W x^2) = 2 W x.
  Graph g = c.g;
  ValueId dx = backward(g, loss, {x})[0];
  g.output("dx", dx);
  TensorMap out = run_reference(g, c.inputs);
  const auto& xv = c.inputs.at("x").f32;
  const auto& wv = c.inputs.at("readout_0").f32;
  for (size_t k = 0; k < xv.size(); ++k) EXPECT_NEAR(out["dx"].f32[k], 2 * wv[k] * xv[k], 1e-6);
}

TEST(GradCheck, Scale) {
  GradCheck c;
  ValueId x = c.input("x", {3, 4});
  c.check(c.weighted_sum(c.g.scale(x, -1.75f)), {"x"});
}

TEST(GradCheck, Gelu) {
  GradCheck c;
  ValueId x = c.input("x", {5, 7}, -3.0, 3.0);
  c.check(c.weighted_sum(c.g.gelu(x)), {"x"});
}

TEST(GradCheck, GeluErf) {
  GradCheck c;
  ValueId x = c.input("x", {5, 7}, -3.0, 3.0);
  c.check(c.weighted_sum(c.g.gelu_erf(x)), {"x"});
}

TEST(GradCheck, Silu) {
  GradCheck c;
  ValueId x = c.input("x", {5, 7}, -4.0, 4.0);
  c.check(c.weighted_sum(c.g.silu(x)), {"x"});
}

// The derivative 2 max(x, 0) is continuous, so x may cross 0 freely.
TEST(GradCheck, SquaredRelu) {
  GradCheck c;
  ValueId x = c.input("x", {5, 7}, -2.0, 2.0);
  c.check(c.weighted_sum(c.g.squared_relu(x)), {"x"});
}

TEST(GradCheck, SwigluGateAndUp) {
  GradCheck c;
  ValueId gate = c.input("gate", {4, 6}, -3.0, 3.0);
  ValueId up = c.input("up", {4, 6});
  c.check(c.weighted_sum(c.g.mul(c.g.silu(gate), up)), {"gate", "up"});
}

TEST(GradCheck, ClampAwayFromItsBounds) {
  constexpr float kLo = -0.5f, kHi = 0.6f;
  GradCheck c;
  ValueId x = c.input("x", {6, 7}, -1.5, 1.5);
  // The derivative jumps at the bounds: keep every x farther from them than
  // the finite-difference step, so each side's slope (1 or 0) is what is
  // measured.
  for (float& v : c.inputs.at("x").f32)
    for (float bound : {kLo, kHi})
      if (std::abs(v - bound) < 0.05f) v = bound + (v < bound ? -0.1f : 0.1f);
  int inside = 0;
  for (float v : c.inputs.at("x").f32) inside += v > kLo && v < kHi;
  ASSERT_GT(inside, 5);
  ASSERT_LT(inside, 37);  // both the passed and the blocked side are checked
  c.check(c.weighted_sum(c.g.clamp(x, kLo, kHi)), {"x"});
}

// The math primitives (graph/ops/math.cpp).
TEST(GradCheck, ExpLogTanhErf) {
  GradCheck c;
  ValueId x = c.input("x", {4, 5}, -1.5, 1.5);
  ValueId p = c.input("p", {4, 5}, 0.5, 3.0);  // log's domain
  ValueId sum = c.g.add(c.g.add(c.g.exp(x), c.g.tanh(x)), c.g.add(c.g.erf(x), c.g.log(p)));
  c.check(c.weighted_sum(sum), {"x", "p"});
}

// MAX's derivative jumps where a = b: keep the pairs apart by more than the
// step; b is broadcast, so its gradient sums over the rows it won.
TEST(GradCheck, MaxAwayFromTiesWithABroadcastB) {
  GradCheck c;
  ValueId a = c.input("a", {5, 6});
  ValueId b = c.input("b", {6});
  const std::vector<float>& bv = c.inputs.at("b").f32;
  std::vector<float>& av = c.inputs.at("a").f32;
  for (size_t k = 0; k < av.size(); ++k)
    if (std::abs(av[k] - bv[k % 6]) < 0.05f) av[k] = bv[k % 6] + (av[k] < bv[k % 6] ? -0.1f : 0.1f);
  c.check(c.weighted_sum(c.g.maximum(a, b)), {"a", "b"});
}

// SELECT passes the gradient to whichever of x and y it picked.
TEST(GradCheck, SelectAwayFromTies) {
  GradCheck c;
  ValueId a = c.input("a", {4, 7}), b = c.input("b", {4, 7});
  ValueId x = c.input("x", {4, 7}), y = c.input("y", {4, 7});
  std::vector<float>& av = c.inputs.at("a").f32;
  const std::vector<float>& bv = c.inputs.at("b").f32;
  for (size_t k = 0; k < av.size(); ++k)
    if (std::abs(av[k] - bv[k]) < 0.05f) av[k] = bv[k] + 0.1f;
  c.check(c.weighted_sum(c.g.select(a, b, x, y)), {"x", "y"});
}

// ------------------------------------------------------------ matmul

TEST(GradCheck, MatmulAllTransposesAndBatches) {
  struct Dims {
    Shape batch;
    int64_t m, k, n;
  };
  for (const Dims& d : {Dims{{}, 3, 4, 5}, Dims{{}, 1, 7, 2}, Dims{{2}, 3, 2, 4}, Dims{{2, 3}, 2, 3, 3}})
    for (int ta = 0; ta < 2; ++ta)
      for (int tb = 0; tb < 2; ++tb) {
        SCOPED_TRACE("batch " + to_string(d.batch) + " m=" + std::to_string(d.m) + " k=" + std::to_string(d.k) +
                     " n=" + std::to_string(d.n) + " trans_a=" + std::to_string(ta) + " trans_b=" + std::to_string(tb));
        Shape as = d.batch, bs = d.batch;
        as.push_back(ta ? d.k : d.m);
        as.push_back(ta ? d.m : d.k);
        bs.push_back(tb ? d.n : d.k);
        bs.push_back(tb ? d.k : d.n);
        GradCheck c;
        ValueId a = c.input("a", as);
        ValueId b = c.input("b", bs);
        ValueId y = c.g.matmul(a, b, ta, tb);
        Shape ys = d.batch;
        ys.push_back(d.m);
        ys.push_back(d.n);
        ASSERT_EQ(c.g.shape(y), ys);
        c.check(c.weighted_sum(y), {"a", "b"});
      }
}

TEST(GradCheck, MatmulWithOneOperandFixed) {
  GradCheck c;
  ValueId x = c.input("x", {4, 3});
  ValueId w = c.input("w", {5, 3});
  c.check(c.weighted_sum(c.g.matmul(x, w, false, true)), {"w"});
}

// ------------------------------------------------------------ embedding, norms, softmax, loss

TEST(GradCheck, EmbeddingTableWithRepeatedIds) {
  GradCheck c;
  ValueId table = c.input("table", {5, 3});
  ValueId ids = c.ids("ids", {2, 3}, {4, 0, 4, 2, 4, 0});  // row 1 and 3 never used
  c.check(c.weighted_sum(c.g.embedding(table, ids)), {"table"});
}

TEST(GradCheck, Layernorm) {
  for (const Shape& s : {Shape{3, 7}, Shape{2, 3, 5}}) {
    SCOPED_TRACE(to_string(s));
    GradCheck c;
    ValueId x = c.input("x", s, -2.0, 2.0);
    ValueId gamma = c.input("gamma", {s.back()}, 0.5, 1.5);
    ValueId beta = c.input("beta", {s.back()});
    c.check(c.weighted_sum(c.g.layernorm(x, gamma, beta, 1e-5f)), {"x", "gamma", "beta"});
  }
}

TEST(GradCheck, Rmsnorm) {
  for (const Shape& s : {Shape{3, 7}, Shape{2, 3, 5}, Shape{4, 2}}) {
    SCOPED_TRACE(to_string(s));
    GradCheck c;
    ValueId x = c.input("x", s, -2.0, 2.0);
    ValueId gamma = c.input("gamma", {s.back()}, 0.5, 1.5);
    c.check(c.weighted_sum(c.g.rmsnorm(x, gamma, 1e-5f)), {"x", "gamma"});
  }
}

// y = rope(x, cos, sin): dx by finite differences, with tables that are no
// rotation (random cos and sin) so a wrong sign or partner shows.
TEST(GradCheck, Rope) {
  struct Case {
    Shape x;
    int64_t pairs;
  };
  // Full rotation, partial rotation (R < D/2), and odd D with partial rotation.
  for (const Case& k : {Case{{2, 3, 6}, 3}, Case{{3, 4, 8}, 2}, Case{{2, 5, 7}, 3}})
    for (bool interleaved : {false, true}) {
      SCOPED_TRACE(to_string(k.x) + " R=" + std::to_string(k.pairs) + (interleaved ? " interleaved" : ""));
      GradCheck c;
      ValueId x = c.input("x", k.x, -2.0, 2.0);
      const Shape table{k.x[k.x.size() - 2], k.pairs};
      ValueId cos = c.input("cos", table), sin = c.input("sin", table);
      c.check(c.weighted_sum(c.g.rope(x, cos, sin, interleaved)), {"x"});
    }
}

TEST(GradCheck, RopeTablesAreConstants) {
  GradCheck c;
  ValueId x = c.input("x", {3, 4});
  ValueId cos = c.input("cos", {3, 2}), sin = c.input("sin", {3, 2});
  ValueId loss = c.weighted_sum(c.g.rope(x, cos, sin, false));
  try {
    backward(c.g, loss, {x, cos});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cos and sin are constant"), std::string::npos) << e.what();
  }
}

// Linear in x with a mask fixed by the key: dx = the same dropout of dy.
TEST(GradCheck, Dropout) {
  for (const Shape& s : {Shape{3, 7}, Shape{2, 3, 5}}) {
    SCOPED_TRACE(to_string(s));
    GradCheck c;
    ValueId x = c.input("x", s, -2.0, 2.0);
    ValueId key = c.ids("key", {4}, {11, 3, 0, 0});
    c.check(c.weighted_sum(c.g.dropout(x, key, 0.5f, 2)), {"x"});
  }
  // A column block with an offset, as a tensor-parallel rank draws it.
  GradCheck c;
  ValueId x = c.input("x", {4, 6}, -2.0, 2.0);
  ValueId key = c.ids("key", {4}, {5, 9, 12, 0});
  c.check(c.weighted_sum(c.g.dropout(x, key, 0.3f, 1, 6, 18)), {"x"});
}

// The keyed form's site is the key's word 4.
TEST(GradCheck, KeyedDropout) {
  GradCheck c;
  ValueId x = c.input("x", {4, 6}, -2.0, 2.0);
  ValueId key = c.ids("key", {5}, {5, 9, 12, 0, 7});
  c.check(c.weighted_sum(c.g.dropout_keyed(x, key, 0.3f, 6, 18)), {"x"});
}

TEST(GradCheck, CausalSoftmax) {
  for (auto [s, scale] :
       {std::pair{Shape{2, 5, 5}, 0.7f}, std::pair{Shape{2, 2, 4, 4}, 1.3f}, std::pair{Shape{1, 1}, 2.0f}}) {
    SCOPED_TRACE(to_string(s));
    GradCheck c;
    ValueId x = c.input("x", s, -2.0, 2.0);
    ValueId y = c.g.causal_softmax(x, scale);
    if (numel(s) == 1) {
      // softmax over one entry is constant 1: the gradient must be exactly 0.
      ValueId dx = backward(c.g, c.weighted_sum(y), {x})[0];
      c.g.output("dx", dx);
      EXPECT_EQ(run_reference(c.g, c.inputs)["dx"].f32, std::vector<float>{0.0f});
      continue;
    }
    c.check(c.weighted_sum(y), {"x"});
  }
}

TEST(GradCheck, DocumentSoftmax) {
  // Two samples of two heads: sample 0 holds documents [0, 2) and [2, 5),
  // sample 1 one document with a start past its row (clamped) at row 3.
  GradCheck c;
  ValueId x = c.input("x", {2, 2, 5, 5}, -2.0, 2.0);
  ValueId starts = c.ids("starts", {2, 5}, {0, 0, 2, 2, 2, 0, 0, 0, 9, 0});
  c.check(c.weighted_sum(c.g.document_softmax(x, starts, 0.8f)), {"x"});
}

TEST(GradCheck, Alibi) {
  // One head, several heads, leading batch dims, and a single position.
  for (const Shape& s : {Shape{1, 4, 4}, Shape{3, 5, 5}, Shape{2, 2, 3, 3}, Shape{1, 1, 1}}) {
    SCOPED_TRACE(to_string(s));
    GradCheck c;
    ValueId x = c.input("x", s, -2.0, 2.0);
    ValueId slopes = c.input("slopes", {s[s.size() - 3]}, -1.0, 1.0);
    c.check(c.weighted_sum(c.g.alibi(x, slopes)), {"x"});
  }
}

TEST(GradCheck, AlibiBeforeTheCausalSoftmaxAndSlopesAreConstants) {
  // MPT's scores: softmax(alibi(x, slopes)), where the bias changes which
  // keys dominate, so dx depends on the slopes through the softmax.
  GradCheck c;
  ValueId x = c.input("x", {2, 3, 4, 4}, -2.0, 2.0);
  ValueId slopes = c.input("slopes", {3}, 0.25, 1.0);
  ValueId loss = c.weighted_sum(c.g.causal_softmax(c.g.alibi(x, slopes), 1.0f));
  c.check(loss, {"x"});
  // The slopes are fixed by the head count (no gradient): exactly zero.
  Graph g = c.g;
  g.output("dslopes", backward(g, loss, {slopes})[0]);
  EXPECT_EQ(run_reference(g, c.inputs).at("dslopes").f32, std::vector<float>(3, 0.0f));
}

TEST(GradCheck, CrossEntropy) {
  GradCheck c;
  ValueId logits = c.input("logits", {4, 7}, -2.0, 2.0);
  ValueId targets = c.ids("targets", {4}, {6, 0, 3, 3});
  c.check(c.g.cross_entropy(logits, targets), {"logits"});
}

TEST(GradCheck, CrossEntropyScaledLoss) {
  // dloss != 1 reaches CROSS_ENTROPY_GRAD when the loss is scaled afterwards.
  GradCheck c;
  ValueId logits = c.input("logits", {3, 5}, -2.0, 2.0);
  ValueId targets = c.ids("targets", {3}, {1, 4, 0});
  c.check(c.g.scale(c.g.cross_entropy(logits, targets), 3.0f), {"logits"});
}

// The vocab-parallel cross-entropy in its pieces. rowmax gets no gradient
// (the loss does not depend on it), which central differences confirm: they
// move the row's max element, and rowmax with it.
TEST(GradCheck, VocabParallelCrossEntropyOneShard) {
  GradCheck c;
  ValueId logits = c.input("logits", {4, 7}, -2.0, 2.0);
  ValueId targets = c.ids("targets", {4}, {6, 0, 3, 3});
  ValueId sums = c.g.cross_entropy_shard(logits, targets, c.g.row_max(logits));
  c.check(c.g.cross_entropy_from_sums(sums), {"logits"});
}

TEST(GradCheck, VocabParallelCrossEntropyTwoShardsScaledLoss) {
  // Vocab 8 in two shards of 4; full targets {6, 0, 3, 5} become local ids
  // {6, 0, 3, 5} and {2, -4, -1, 1}: out of range where the other shard
  // holds the target. A scaled loss makes dloss != 1.
  GradCheck c;
  ValueId logits = c.input("logits", {4, 8}, -2.0, 2.0);
  ValueId mx = c.g.row_max(logits);
  std::vector<ValueId> parts = c.g.split(logits, 1, 2);
  ValueId t0 = c.ids("t0", {4}, {6, 0, 3, 5}), t1 = c.ids("t1", {4}, {2, -4, -1, 1});
  ValueId sums = c.g.add(c.g.cross_entropy_shard(parts[0], t0, mx), c.g.cross_entropy_shard(parts[1], t1, mx));
  c.check(c.g.scale(c.g.cross_entropy_from_sums(sums), 3.0f), {"logits"});
}

TEST(GradCheck, CrossEntropyShardAlone) {
  // Both columns of the sums read out with their own weights, so dsums is
  // arbitrary (not what from_sums would give); rowmax is a free input.
  GradCheck c;
  ValueId logits = c.input("logits", {5, 6}, -2.0, 2.0);
  ValueId rowmax = c.input("rowmax", {5}, 2.0, 3.0);
  ValueId targets = c.ids("targets", {5}, {0, 5, -1, 6, 2});
  c.check(c.weighted_sum(c.g.cross_entropy_shard(logits, targets, rowmax)), {"logits"});
}

TEST(GradCheck, CrossEntropyFromSums) {
  GradCheck c;
  ValueId sums = c.input("sums", {5, 2}, 0.5, 3.0);
  c.check(c.g.scale(c.g.cross_entropy_from_sums(sums), 2.0f), {"sums"});
}

TEST(GradCheck, SumSquares) {
  GradCheck c;
  ValueId x = c.input("x", {3, 4});
  c.check(c.g.scale(c.g.sum_squares(x), 0.5f), {"x"});
  GradCheck d;
  ValueId v = d.input("v", {5});
  d.check(d.g.sum_squares(v), {"v"});
}

// ------------------------------------------------------------ reductions and layout

TEST(GradCheck, SumTo) {
  for (const Shape& target : {Shape{3, 4}, Shape{4}, Shape{2, 3, 4}}) {
    SCOPED_TRACE(to_string(target));
    GradCheck c;
    ValueId x = c.input("x", {2, 3, 4});
    c.check(c.weighted_sum(c.g.sum_to(x, target)), {"x"});
  }
}

TEST(GradCheck, Reshape) {
  GradCheck c;
  ValueId x = c.input("x", {2, 3, 4});
  c.check(c.weighted_sum(c.g.reshape(x, {4, 6})), {"x"});
}

TEST(GradCheck, Permute) {
  for (auto [s, perm] : {std::pair{Shape{2, 3, 4}, std::vector<int64_t>{2, 0, 1}},
                         std::pair{Shape{2, 3, 4, 5}, std::vector<int64_t>{0, 2, 1, 3}},
                         std::pair{Shape{3, 5}, std::vector<int64_t>{1, 0}}}) {
    SCOPED_TRACE(to_string(s));
    GradCheck c;
    ValueId x = c.input("x", s);
    c.check(c.weighted_sum(c.g.permute(x, perm)), {"x"});
  }
}

TEST(GradCheck, SplitWithUnusedParts) {
  GradCheck c;
  ValueId x = c.input("x", {4, 6});
  auto parts = c.g.split(x, 1, 3);
  // Part 1 is never read: its share of dx must be zero (a FILL 0).
  ValueId loss = c.g.add(c.weighted_sum(parts[0]), c.weighted_sum(parts[2]));
  c.check(loss, {"x"});
  GradCheck d;
  ValueId y = d.input("y", {6, 2, 3});
  auto rows = d.g.split(y, 0, 2);
  d.check(d.weighted_sum(d.g.mul(rows[0], rows[1])), {"y"});
}

TEST(GradCheck, ConcatEqualAndUnequalParts) {
  {
    SCOPED_TRACE("equal parts");
    GradCheck c;
    ValueId a = c.input("a", {2, 3});
    ValueId b = c.input("b", {2, 3});
    c.check(c.weighted_sum(c.g.concat({a, b}, 1)), {"a", "b"});
  }
  {
    SCOPED_TRACE("parts 2, 4, 6 (gcd 2)");
    GradCheck c;
    ValueId a = c.input("a", {2, 2});
    ValueId b = c.input("b", {2, 4});
    ValueId d = c.input("d", {2, 6});
    c.check(c.weighted_sum(c.g.concat({a, b, d}, 1)), {"a", "b", "d"});
  }
  {
    SCOPED_TRACE("parts 3, 5 along axis 0 (gcd 1), one part not differentiated");
    GradCheck c;
    ValueId a = c.input("a", {3, 2});
    ValueId b = c.input("b", {5, 2});
    c.check(c.weighted_sum(c.g.concat({a, b}, 0)), {"b"});
  }
}

// ------------------------------------------------------------ compositions

TEST(GradCheck, TwoOpChain) {
  GradCheck c;
  ValueId x = c.input("x", {3, 4});
  ValueId w = c.input("w", {4, 5});
  c.check(c.weighted_sum(c.g.gelu(c.g.matmul(x, w))), {"x", "w"});
}

TEST(GradCheck, ValueWithSeveralConsumers) {
  GradCheck c;
  ValueId x = c.input("x", {2, 5});
  ValueId y = c.g.add(c.g.gelu(x), c.g.scale(x, 3.0f));
  ValueId z = c.g.mul(y, x);
  c.check(c.weighted_sum(z), {"x"});
}

// A one-layer, two-head GPT block with tied embeddings: every op a GPT step
// uses, composed the way the model builder composes them.
TEST(GradCheck, TinyTransformerBlock) {
  const int64_t B = 2, T = 4, C = 8, H = 2, D = C / H, V = 7;
  GradCheck c(7);
  Graph& g = c.g;
  ValueId ids = c.ids("ids", {B, T}, {1, 5, 2, 6, 0, 3, 3, 4});
  ValueId targets = c.ids("targets", {B * T}, {5, 2, 6, 1, 3, 3, 4, 0});
  ValueId wte = c.input("wte", {V, C}, -0.5, 0.5);
  ValueId wpe = c.input("wpe", {T, C}, -0.5, 0.5);
  ValueId g1 = c.input("ln1_g", {C}, 0.8, 1.2), b1 = c.input("ln1_b", {C}, -0.1, 0.1);
  ValueId wqkv = c.input("w_qkv", {C, 3 * C}, -0.5, 0.5), bqkv = c.input("b_qkv", {3 * C}, -0.1, 0.1);
  ValueId wo = c.input("w_o", {C, C}, -0.5, 0.5), bo = c.input("b_o", {C}, -0.1, 0.1);
  ValueId g2 = c.input("ln2_g", {C}, 0.8, 1.2), b2 = c.input("ln2_b", {C}, -0.1, 0.1);
  ValueId w1 = c.input("w_fc", {C, 4 * C}, -0.5, 0.5), bf1 = c.input("b_fc", {4 * C}, -0.1, 0.1);
  ValueId w2 = c.input("w_proj", {4 * C, C}, -0.3, 0.3), bf2 = c.input("b_proj", {C}, -0.1, 0.1);
  ValueId gf = c.input("lnf_g", {C}, 0.8, 1.2), bf = c.input("lnf_b", {C}, -0.1, 0.1);

  ValueId x = g.reshape(g.add(g.embedding(wte, ids), wpe), {B * T, C});
  ValueId h = g.layernorm(x, g1, b1, 1e-5f);
  ValueId qkv = g.reshape(g.add(g.matmul(h, wqkv), bqkv), {B, T, 3 * C});
  auto heads = g.split(qkv, 2, 3);
  auto to_heads = [&](ValueId t) { return g.permute(g.reshape(t, {B, T, H, D}), {0, 2, 1, 3}); };
  ValueId q = to_heads(heads[0]), k = to_heads(heads[1]), v = to_heads(heads[2]);
  ValueId p = g.causal_softmax(g.matmul(q, k, false, true), 1.0f / std::sqrt(static_cast<float>(D)));
  ValueId o = g.reshape(g.permute(g.matmul(p, v), {0, 2, 1, 3}), {B * T, C});
  x = g.add(x, g.add(g.matmul(o, wo), bo));
  ValueId m = g.gelu(g.add(g.matmul(g.layernorm(x, g2, b2, 1e-5f), w1), bf1));
  x = g.add(x, g.add(g.matmul(m, w2), bf2));
  ValueId logits = g.matmul(g.layernorm(x, gf, bf, 1e-5f), wte, false, true);
  ValueId loss = g.cross_entropy(logits, targets);
  c.check(loss,
          {"wte", "wpe", "ln1_g", "ln1_b", "w_qkv", "b_qkv", "w_o", "b_o", "ln2_g", "ln2_b", "w_fc", "b_fc", "w_proj",
           "b_proj", "lnf_g", "lnf_b"},
          1e-2, 2e-2);
}

// ------------------------------------------------------------ structure of the backward graph

std::vector<Node> nodes_after(const Graph& g, size_t first) {
  return std::vector<Node>(g.nodes().begin() + static_cast<long>(first), g.nodes().end());
}

size_t count_op(const std::vector<Node>& nodes, kiln_op op) {
  return static_cast<size_t>(std::count_if(nodes.begin(), nodes.end(), [&](const Node& n) { return n.op == op; }));
}

bool reads(const std::vector<Node>& nodes, ValueId v) {
  for (const Node& n : nodes)
    if (std::find(n.inputs.begin(), n.inputs.end(), v) != n.inputs.end()) return true;
  return false;
}

TEST(Autodiff, PrunesBranchesOutsideTheLossOrWrt) {
  GradCheck c;
  Graph& g = c.g;
  ValueId a = c.input("a", {3}), b = c.input("b", {3}), cc = c.input("c", {3});
  ValueId w = c.input("w", {3});
  ValueId side = g.gelu(cc);     // feeds the loss, but no wrt value feeds it
  ValueId dangling = g.gelu(a);  // depends on a, but the loss never reads it
  ValueId s = g.add(g.mul(a, b), side);
  ValueId loss = g.sum_to(g.reshape(g.mul(s, w), {3, 1}), {1});
  size_t before = g.nodes().size();
  ValueId da = backward(g, loss, {a})[0];
  std::vector<Node> added = nodes_after(g, before);
  EXPECT_EQ(count_op(added, KILN_OP_GELU_GRAD), 0u);
  // ds = dy * w and da = ds * b only: no gradient for w, b (not in wrt).
  EXPECT_EQ(count_op(added, KILN_OP_MUL), 2u);
  EXPECT_FALSE(reads(added, cc));
  EXPECT_FALSE(reads(added, side));
  EXPECT_FALSE(reads(added, dangling));
  EXPECT_EQ(g.shape(da), (Shape{3}));
  // The gradient is still right: da = w * b.
  g.output("da", da);
  TensorMap out = run_reference(g, c.inputs);
  for (size_t k = 0; k < 3; ++k) EXPECT_NEAR(out["da"].f32[k], c.inputs["w"].f32[k] * c.inputs["b"].f32[k], 1e-6);
}

TEST(Autodiff, NothingIsEmittedWhenNoWrtValueIsOnThePath) {
  GradCheck c;
  ValueId x = c.input("x", {2, 3});
  ValueId unused = c.input("unused", {4});
  ValueId loss = c.weighted_sum(c.g.gelu(x));
  size_t before = c.g.nodes().size();
  ValueId d = backward(c.g, loss, {unused})[0];
  std::vector<Node> added = nodes_after(c.g, before);
  ASSERT_EQ(added.size(), 1u);
  EXPECT_EQ(added[0].op, KILN_OP_FILL);
  EXPECT_EQ(added[0].fattrs, std::vector<float>{0.0f});
  EXPECT_EQ(c.g.shape(d), (Shape{4}));
}

TEST(Autodiff, ZeroGradientsForWrtValuesTheLossDoesNotRead) {
  GradCheck c;
  ValueId x = c.input("x", {2, 3});
  ValueId unused = c.input("unused", {4, 2});
  ValueId off_path = c.input("off_path", {2, 3});
  ValueId ignored = c.g.mul(off_path, x);  // consumed, but not by the loss
  (void)ignored;
  ValueId loss = c.weighted_sum(c.g.scale(x, 2.0f));
  std::vector<ValueId> d = backward(c.g, loss, {unused, x, off_path});
  c.g.output("d_unused", d[0]);
  c.g.output("d_x", d[1]);
  c.g.output("d_off", d[2]);
  TensorMap out = run_reference(c.g, c.inputs);
  EXPECT_EQ(out["d_unused"].shape, (Shape{4, 2}));
  EXPECT_EQ(out["d_unused"].f32, std::vector<float>(8, 0.0f));
  EXPECT_EQ(out["d_off"].f32, std::vector<float>(6, 0.0f));
  for (size_t k = 0; k < 6; ++k) EXPECT_FLOAT_EQ(out["d_x"].f32[k], 2 * c.inputs["readout_0"].f32[k]);
}

TEST(Autodiff, GradientOfLossWithRespectToItselfIsOne) {
  GradCheck c;
  ValueId x = c.input("x", {3});
  ValueId loss = c.g.sum_squares(x);
  std::vector<ValueId> d = backward(c.g, loss, {loss});
  c.g.output("d", d[0]);
  EXPECT_EQ(run_reference(c.g, c.inputs)["d"].f32, std::vector<float>{1.0f});
}

TEST(Autodiff, IntermediateWrtGetsTotalDerivative) {
  // wrt = {x, h} with h = scale(x): dh is the full gradient at h and dx
  // includes the path through h.
  GradCheck c;
  ValueId x = c.input("x", {4});
  ValueId h = c.g.scale(x, 3.0f);
  ValueId loss = c.weighted_sum(c.g.add(h, x));
  std::vector<ValueId> d = backward(c.g, loss, {x, h});
  c.g.output("dx", d[0]);
  c.g.output("dh", d[1]);
  TensorMap out = run_reference(c.g, c.inputs);
  for (size_t k = 0; k < 4; ++k) {
    float w = c.inputs["readout_0"].f32[k];
    EXPECT_FLOAT_EQ(out["dh"].f32[k], w);
    EXPECT_FLOAT_EQ(out["dx"].f32[k], 4 * w);
  }
}

TEST(Autodiff, EmbeddingIdsGetNoGradientPath) {
  GradCheck c;
  ValueId table = c.input("table", {4, 2});
  ValueId ids = c.ids("ids", {3}, {0, 3, 3});
  ValueId loss = c.weighted_sum(c.g.embedding(table, ids));
  size_t before = c.g.nodes().size();
  std::vector<ValueId> d = backward(c.g, loss, {table, ids});
  std::vector<Node> added = nodes_after(c.g, before);
  EXPECT_EQ(count_op(added, KILN_OP_EMBEDDING_GRAD), 1u);
  c.g.output("d_ids", d[1]);
  TensorMap out = run_reference(c.g, c.inputs);
  EXPECT_EQ(out["d_ids"].f32, std::vector<float>(3, 0.0f));
}

TEST(Autodiff, RejectsBadLossAndGradOpsOnThePath) {
  GradCheck c;
  ValueId x = c.input("x", {2, 3});
  ValueId y = c.g.gelu(x);
  EXPECT_THROW(backward(c.g, y, {x}), kiln::Error);  // loss must be [1]
  // Differentiating through GELU_GRAD has no rule.
  ValueId dy = c.input("dy", {2, 3});
  ValueId gg = c.g.gelu_grad(x, dy);
  ValueId loss = c.weighted_sum(gg);
  try {
    backward(c.g, loss, {x});
    FAIL() << "expected kiln::Error";
  } catch (const kiln::Error& e) {
    EXPECT_NE(std::string(e.what()).find("gelu_grad"), std::string::npos) << e.what();
  }
  // Differentiating the same loss with respect to something upstream of the
  // grad op only through other paths is fine.
  ValueId w = c.input("w", {2, 3});
  ValueId loss2 = c.g.add(loss, c.weighted_sum(w));
  EXPECT_NO_THROW(backward(c.g, loss2, {w}));
}

TEST(Autodiff, ConcatOfTooManyChunksIsRejected) {
  GradCheck c;
  ValueId a = c.input("a", {1});
  ValueId b = c.input("b", {255});
  ValueId loss = c.g.sum_squares(c.g.concat({a, b}, 0));
  try {
    backward(c.g, loss, {a});
    FAIL() << "expected kiln::Error";
  } catch (const kiln::Error& e) {
    EXPECT_NE(std::string(e.what()).find("unequal"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kiln::graph
