// Built-in cases for the vocab-parallel cross-entropy's device ops: row_max,
// cross_entropy_shard(_grad) and cross_entropy_from_sums(_grad). Inputs look
// like what a shard sees in training: rowmax is the max over the whole
// vocabulary, so at least this shard's max, and targets lie in this shard
// ([0, V)) or in another (negative, or >= V). Sizes are no multiple of any
// tile; logits of large magnitude check that the row max is subtracted before
// anything is exponentiated. ALL_REDUCE has no case: it is a host collective.
#include <algorithm>
#include <cmath>

#include "graph/conformance/op_cases.h"

namespace kiln::conformance {

using graph::Graph;
using graph::HostTensor;
using graph::Shape;
using graph::ValueId;

namespace {

std::string n(int64_t v) { return std::to_string(v); }

struct Dims {
  int64_t n, v;
  std::string what() const { return "N=" + std::to_string(n) + " V=" + std::to_string(v); }
};

// Logits in [center - spread, center + spread).
HostTensor logits_like(CaseMaker& m, Dims d, float center, float spread) {
  return m.rng.uniform({d.n, d.v}, center - spread, center + spread);
}

// The max over a vocabulary this shard is part of: its own row max, raised
// for about half the rows as if another shard held a larger logit.
HostTensor group_rowmax(CaseMaker& m, const HostTensor& logits) {
  const int64_t rows = logits.shape[0], cols = logits.shape[1];
  HostTensor mx = HostTensor::zeros(KILN_F32, {rows});
  for (int64_t r = 0; r < rows; ++r) {
    const float* row = logits.f32.data() + r * cols;
    const float raise = m.rng.next(-3.0f, 3.0f);
    mx.f32[static_cast<size_t>(r)] = *std::max_element(row, row + cols) + std::max(raise, 0.0f);
  }
  return mx;
}

// Targets spread over three shards' worth of ids, [-V, 2V): about a third
// are this shard's; the first three rows are one of each kind for sure.
HostTensor shard_targets(CaseMaker& m, Dims d) {
  HostTensor t = m.rng.ids({d.n}, 3 * d.v);
  for (int32_t& id : t.i32) id -= static_cast<int32_t>(d.v);
  const int32_t kinds[] = {static_cast<int32_t>(d.v / 2), -1, static_cast<int32_t>(d.v)};
  for (size_t i = 0; i < 3 && i < t.i32.size(); ++i) t.i32[i] = kinds[i];
  return t;
}

// Group-summed sums as from_sums receives them: sums[i][0] >= 1 (the row
// max's own term is exp(0)), sums[i][1] <= 0 (a logit minus the max).
HostTensor sums_like(CaseMaker& m, int64_t rows, float max_sum, float min_target) {
  HostTensor s = HostTensor::zeros(KILN_F32, {rows, 2});
  for (int64_t r = 0; r < rows; ++r) {
    s.f32[static_cast<size_t>(2 * r)] = m.rng.next(1.0f, max_sum);
    s.f32[static_cast<size_t>(2 * r + 1)] = m.rng.next(min_target, 0.0f);
  }
  return s;
}

void row_max_cases(CaseMaker& m) {
  for (const Shape& s :
       {Shape{1, 1}, Shape{5, 37}, Shape{33, 65}, Shape{64, 1000}, Shape{2, 3, 129}, Shape{3, 50257}}) {
    Graph g;
    g.output("y", g.row_max(g.input("x", KILN_F32, s)));
    m.add(KILN_OP_ROW_MAX, str(s), std::move(g), {{"x", m.rng.uniform(s, -100.0f, 100.0f)}});
  }
  // NaN poisons its row; infinities are ordinary extremes.
  HostTensor x = m.rng.uniform({4, 37}, -5.0f, 5.0f);
  x.f32[0 * 37 + 30] = std::nanf("");
  x.f32[1 * 37 + 3] = INFINITY;
  for (int64_t j = 0; j < 37; ++j) x.f32[static_cast<size_t>(2 * 37 + j)] = -INFINITY;
  x.f32[3 * 37 + 36] = -INFINITY;
  Graph g;
  g.output("y", g.row_max(g.input("x", KILN_F32, {4, 37})));
  m.add(KILN_OP_ROW_MAX, "[4, 37] with NaN and infinities", std::move(g), {{"x", x}});
}

// One shard's inputs at one size and logit range.
struct ShardInputs {
  Dims d;
  std::string what;
  HostTensor logits, targets, rowmax;
};

void shard_cases(CaseMaker& m, const ShardInputs& in) {
  {
    Graph g;
    ValueId l = g.input("logits", KILN_F32, {in.d.n, in.d.v}), t = g.input("targets", KILN_I32, {in.d.n});
    g.output("sums", g.cross_entropy_shard(l, t, g.input("rowmax", KILN_F32, {in.d.n})));
    m.add(KILN_OP_CROSS_ENTROPY_SHARD, in.what, std::move(g),
          {{"logits", in.logits}, {"targets", in.targets}, {"rowmax", in.rowmax}});
  }
  Graph g;
  ValueId l = g.input("logits", KILN_F32, {in.d.n, in.d.v}), t = g.input("targets", KILN_I32, {in.d.n});
  ValueId mx = g.input("rowmax", KILN_F32, {in.d.n});
  g.output("dlogits", g.cross_entropy_shard_grad(l, t, mx, g.input("dsums", KILN_F32, {in.d.n, 2})));
  m.add(KILN_OP_CROSS_ENTROPY_SHARD_GRAD, in.what, std::move(g),
        {{"logits", in.logits}, {"targets", in.targets}, {"rowmax", in.rowmax}, {"dsums", m.rng.uniform({in.d.n, 2})}});
}

void cross_entropy_shard_cases(CaseMaker& m) {
  for (Dims d : {Dims{1, 1}, Dims{3, 17}, Dims{5, 37}, Dims{33, 65}, Dims{64, 1000}, Dims{5, 50257}}) {
    HostTensor logits = logits_like(m, d, 0.0f, 6.0f);
    HostTensor rowmax = group_rowmax(m, logits);
    shard_cases(m, {d, d.what(), logits, shard_targets(m, d), rowmax});
  }
  // Large magnitudes: far from 0 (exp would overflow before the max is
  // subtracted), and widely spread (most terms underflow to 0).
  for (float center : {5000.0f, -3000.0f}) {
    Dims d{7, 129};
    HostTensor logits = logits_like(m, d, center, 20.0f);
    HostTensor rowmax = group_rowmax(m, logits);
    shard_cases(m,
                {d, d.what() + " logits near " + n(static_cast<int64_t>(center)), logits, shard_targets(m, d), rowmax});
  }
  Dims d{64, 1000};
  HostTensor logits = logits_like(m, d, 0.0f, 1000.0f);
  HostTensor rowmax = group_rowmax(m, logits);
  shard_cases(m, {d, d.what() + " logits in [-1000, 1000)", logits, shard_targets(m, d), rowmax});
}

void cross_entropy_from_sums_cases(CaseMaker& m) {
  struct S {
    int64_t rows;
    float max_sum, min_target;
  };
  for (S s : {S{1, 1.0f, 0.0f}, S{5, 37.0f, -8.0f}, S{64, 1000.0f, -12.0f}, S{1000, 50257.0f, -20.0f},
              S{8193, 50257.0f, -20.0f}, S{37, 1e6f, -2000.0f}}) {
    const std::string what = "N=" + n(s.rows) + " sums[.][0] in [1, " + n(static_cast<int64_t>(s.max_sum)) + "]";
    HostTensor sums = sums_like(m, s.rows, s.max_sum, s.min_target);
    {
      Graph g;
      g.output("loss", g.cross_entropy_from_sums(g.input("sums", KILN_F32, {s.rows, 2})));
      m.add(KILN_OP_CROSS_ENTROPY_FROM_SUMS, what, std::move(g), {{"sums", sums}});
    }
    Graph g;
    ValueId sv = g.input("sums", KILN_F32, {s.rows, 2});
    g.output("dsums", g.cross_entropy_from_sums_grad(sv, g.input("dloss", KILN_F32, {1})));
    m.add(KILN_OP_CROSS_ENTROPY_FROM_SUMS_GRAD, what, std::move(g), {{"sums", sums}, {"dloss", m.rng.scalar(0.75f)}});
  }
}

// The four pieces as one shard holding the whole vocabulary uses them: the
// loss and its gradient, each piece reading what the previous one wrote.
void whole_chain_case(CaseMaker& m) {
  Dims d{33, 1000};
  Graph g;
  ValueId l = g.input("logits", KILN_F32, {d.n, d.v}), t = g.input("targets", KILN_I32, {d.n});
  ValueId mx = g.row_max(l);
  ValueId sums = g.cross_entropy_shard(l, t, mx);
  g.output("loss", g.cross_entropy_from_sums(sums));
  ValueId dsums = g.cross_entropy_from_sums_grad(sums, g.input("dloss", KILN_F32, {1}));
  g.output("dlogits", g.cross_entropy_shard_grad(l, t, mx, dsums));
  m.add(KILN_OP_CROSS_ENTROPY_FROM_SUMS, d.what() + " row_max -> shard -> from_sums and back", std::move(g),
        {{"logits", logits_like(m, d, 0.0f, 6.0f)}, {"targets", m.rng.ids({d.n}, d.v)}, {"dloss", m.rng.scalar(1.0f)}});
}

}  // namespace

void add_vocab_parallel_cases(Suite& suite) {
  CaseMaker m(suite, 2718);
  row_max_cases(m);
  cross_entropy_shard_cases(m);
  cross_entropy_from_sums_cases(m);
  whole_chain_case(m);
}

}  // namespace kiln::conformance
