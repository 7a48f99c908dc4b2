// Built-in cases for the ops with structure beyond one element: matmul
// (every transpose combination, batched), embedding, layernorm, causal
// softmax (within documents too, and ALIBI's bias before it), cross entropy, and their gradients.
// Sizes are no multiple of any tile; a few are attention-sized to reach the
// tiled paths.
#include <cmath>

#include "graph/conformance/op_cases.h"

namespace kiln::conformance {

using graph::Graph;
using graph::Shape;
using graph::ValueId;

namespace {

std::string n(int64_t v) { return std::to_string(v); }

void matmul_cases(CaseMaker& m) {
  struct Dims {
    Shape batch;
    int64_t m, n, k;
  };
  const Dims dims[] = {{{}, 1, 1, 1},
                       {{}, 3, 5, 7},
                       {{}, 17, 33, 65},
                       {{}, 65, 17, 127},
                       {{}, 128, 96, 200},
                       {{2, 3}, 17, 5, 33},
                       {{12}, 64, 64, 64},
                       {{3}, 130, 130, 130},
                       {{1}, 65, 3, 17},
                       {{5}, 1, 7, 3},
                       // A weight gradient's shape: one tile of C, a long K
                       // (GPU plugins split K here: Vulkan's split-K path).
                       {{}, 100, 72, 3000}};
  for (const Dims& d : dims)
    for (int ta = 0; ta < 2; ++ta)
      for (int tb = 0; tb < 2; ++tb) {
        Shape sa = d.batch, sb = d.batch;
        sa.push_back(ta ? d.k : d.m);
        sa.push_back(ta ? d.m : d.k);
        sb.push_back(tb ? d.n : d.k);
        sb.push_back(tb ? d.k : d.n);
        Graph g;
        ValueId a = g.input("a", KILN_F32, sa), b = g.input("b", KILN_F32, sb);
        g.output("y", g.matmul(a, b, ta, tb));
        m.add(KILN_OP_MATMUL, str(sa) + (ta ? "^T" : "") + " @ " + str(sb) + (tb ? "^T" : ""), std::move(g),
              {{"a", m.rng.uniform(sa)}, {"b", m.rng.uniform(sb)}});
      }
}

void embedding_cases(CaseMaker& m) {
  struct E {
    int64_t vocab, c;
    Shape ids;
  };
  for (const E& e : {E{1, 1, {1}}, E{17, 3, {5}}, E{50, 65, {3, 17}}, E{1000, 128, {4, 64}}}) {
    Graph g;
    g.output("y", g.embedding(g.input("table", KILN_F32, {e.vocab, e.c}), g.input("ids", KILN_I32, e.ids)));
    m.add(KILN_OP_EMBEDDING, "V=" + n(e.vocab) + " C=" + n(e.c) + " ids " + str(e.ids), std::move(g),
          {{"table", m.rng.uniform({e.vocab, e.c})}, {"ids", m.rng.ids(e.ids, e.vocab)}});
  }
  // Small vocabularies force repeated ids (scatter-add collisions).
  for (const E& e : {E{1, 1, {1}}, E{5, 17, {33}}, E{7, 3, {10000}}, E{50, 65, {3, 17}}, E{300, 128, {8, 64}},
                     E{1000, 33, {2, 65}}}) {
    Shape dys = e.ids;
    dys.push_back(e.c);
    Graph g;
    g.output("dtable", g.embedding_grad(g.input("dy", KILN_F32, dys), g.input("ids", KILN_I32, e.ids), e.vocab));
    m.add(KILN_OP_EMBEDDING_GRAD, "V=" + n(e.vocab) + " dy " + str(dys), std::move(g),
          {{"dy", m.rng.uniform(dys)}, {"ids", m.rng.ids(e.ids, e.vocab)}});
  }
}

void layernorm_cases(CaseMaker& m) {
  for (const Shape& s : {Shape{1, 1}, Shape{3, 17}, Shape{33, 65}, Shape{2, 5, 768}, Shape{1000, 33}, Shape{127}}) {
    const int64_t c = s.back();
    // An offset mean tests a two-pass (or otherwise stable) variance.
    graph::TensorMap in{{"x", m.rng.uniform(s, 2.0f, 4.0f)},
                        {"gamma", m.rng.uniform({c}, 0.5f, 1.5f)},
                        {"beta", m.rng.uniform({c})},
                        {"dy", m.rng.uniform(s)}};
    {
      Graph g;
      ValueId x = g.input("x", KILN_F32, s), gamma = g.input("gamma", KILN_F32, {c});
      g.output("y", g.layernorm(x, gamma, g.input("beta", KILN_F32, {c}), 1e-5f));
      graph::TensorMap fwd = in;
      fwd.erase("dy");
      m.add(KILN_OP_LAYERNORM, str(s), std::move(g), std::move(fwd));
    }
    Graph g;
    ValueId x = g.input("x", KILN_F32, s), gamma = g.input("gamma", KILN_F32, {c});
    auto grads = g.layernorm_grad(x, gamma, g.input("dy", KILN_F32, s), 1e-5f);
    g.output("dx", grads[0]);
    g.output("dgamma", grads[1]);
    g.output("dbeta", grads[2]);
    in.erase("beta");
    m.add(KILN_OP_LAYERNORM_GRAD, str(s), std::move(g), std::move(in));
  }
  // A NaN turns its row into NaN.
  graph::HostTensor x = m.rng.uniform({3, 33}, -3.0f, 3.0f);
  x.f32[5] = std::nanf("");
  Graph g;
  ValueId xv = g.input("x", KILN_F32, {3, 33}), gamma = g.input("gamma", KILN_F32, {33});
  g.output("y", g.layernorm(xv, gamma, g.input("beta", KILN_F32, {33}), 1e-5f));
  m.add(KILN_OP_LAYERNORM, "[3, 33] with NaN", std::move(g),
        {{"x", x}, {"gamma", m.rng.uniform({33})}, {"beta", m.rng.uniform({33})}});
}

void rmsnorm_cases(CaseMaker& m) {
  for (const Shape& s : {Shape{1, 1}, Shape{3, 17}, Shape{33, 65}, Shape{2, 5, 768}, Shape{1000, 33}, Shape{127}}) {
    const int64_t c = s.back();
    graph::TensorMap in{
        {"x", m.rng.uniform(s, -3.0f, 3.0f)}, {"gamma", m.rng.uniform({c}, 0.5f, 1.5f)}, {"dy", m.rng.uniform(s)}};
    {
      Graph g;
      g.output("y", g.rmsnorm(g.input("x", KILN_F32, s), g.input("gamma", KILN_F32, {c}), 1e-5f));
      graph::TensorMap fwd = in;
      fwd.erase("dy");
      m.add(KILN_OP_RMSNORM, str(s), std::move(g), std::move(fwd));
    }
    // With one column and a small eps, dx = rstd g (1 - xhat^2) is almost
    // all cancellation (xhat^2 ~ 1 - eps / x^2), which no fp32 kernel gets to
    // 1e-7; a large eps keeps that size-1 case well conditioned.
    const float eps = c == 1 ? 1.0f : 1e-5f;
    Graph g;
    auto grads =
        g.rmsnorm_grad(g.input("x", KILN_F32, s), g.input("gamma", KILN_F32, {c}), g.input("dy", KILN_F32, s), eps);
    g.output("dx", grads[0]);
    g.output("dgamma", grads[1]);
    m.add(KILN_OP_RMSNORM_GRAD, str(s), std::move(g), std::move(in));
  }
  // An all-zero row is eps-bound (y = 0, no NaN); a NaN turns its row into NaN.
  graph::HostTensor x = m.rng.uniform({3, 33}, -3.0f, 3.0f);
  for (int64_t j = 0; j < 33; ++j) x.f32[static_cast<size_t>(33 + j)] = 0.0f;
  x.f32[5] = std::nanf("");
  Graph g;
  g.output("y", g.rmsnorm(g.input("x", KILN_F32, {3, 33}), g.input("gamma", KILN_F32, {33}), 1e-6f));
  m.add(KILN_OP_RMSNORM, "[3, 33] with a zero row and a NaN", std::move(g), {{"x", x}, {"gamma", m.rng.uniform({33})}});
}

// Packed documents: sample b's documents are `len` tokens long (varying by
// sample, one sample a single document); each query's start is the first
// position after the last EOD before it, as --reset-attention-mask makes them.
graph::HostTensor document_starts(int64_t B, int64_t T) {
  graph::HostTensor starts = graph::HostTensor::zeros(KILN_I32, {B, T});
  for (int64_t b = 0; b < B; ++b) {
    const int64_t len = b == 1 ? T : 2 + (5 * b + 3) % 9;
    for (int64_t i = 0; i < T; ++i) starts.i32[static_cast<size_t>(b * T + i)] = static_cast<int32_t>(i / len * len);
  }
  return starts;
}

void document_softmax_cases(CaseMaker& m) {
  struct C {
    Shape x;
    float scale;
  };
  for (const C& c : {C{{1, 1, 1}, 0.5f}, C{{3, 17, 17}, 0.125f}, C{{2, 3, 33, 33}, -0.5f}, C{{4, 12, 64, 64}, 0.125f},
                     C{{2, 2, 2, 65, 65}, 0.3f}}) {
    const int64_t B = c.x[0], T = c.x.back();
    Graph g;
    g.output("y", g.document_softmax(g.input("x", KILN_F32, c.x), g.input("starts", KILN_I32, {B, T}), c.scale));
    m.add(KILN_OP_DOCUMENT_SOFTMAX, str(c.x) + " scale " + std::to_string(c.scale), std::move(g),
          {{"x", m.rng.uniform(c.x, -4.0f, 4.0f)}, {"starts", document_starts(B, T)}});
  }
  // Starts outside [0, i] are clamped: below 0 the row is causal, past i it
  // sees only its own key.
  const Shape s{2, 3, 9, 9};
  graph::HostTensor starts = document_starts(2, 9);
  for (int64_t i = 0; i < 9; i += 2) starts.i32[static_cast<size_t>(i)] = -7;
  for (int64_t i = 1; i < 9; i += 2) starts.i32[static_cast<size_t>(9 + i)] = 100;
  Graph g;
  g.output("y", g.document_softmax(g.input("x", KILN_F32, s), g.input("starts", KILN_I32, {2, 9}), 1.0f));
  m.add(KILN_OP_DOCUMENT_SOFTMAX, str(s) + " with starts outside [0, i]", std::move(g),
        {{"x", m.rng.uniform(s, -4.0f, 4.0f)}, {"starts", starts}});
}

void softmax_cases(CaseMaker& m) {
  for (const Shape& s :
       {Shape{1, 1}, Shape{3, 3}, Shape{17, 17}, Shape{65, 65}, Shape{2, 3, 33, 33}, Shape{4, 12, 64, 64}})
    for (float scale : {0.125f, -0.5f}) {
      Graph g;
      g.output("y", g.causal_softmax(g.input("x", KILN_F32, s), scale));
      m.add(KILN_OP_CAUSAL_SOFTMAX, str(s) + " scale " + std::to_string(scale), std::move(g),
            {{"x", m.rng.uniform(s, -4.0f, 4.0f)}});
    }
  {
    // Masked scores (-inf) contribute exactly 0; column 0 stays finite.
    Shape s{2, 17, 17};
    graph::HostTensor x = m.rng.uniform(s, -2.0f, 2.0f);
    for (size_t i = 0; i < x.f32.size(); i += 5)
      if (i % 17 != 0) x.f32[i] = -INFINITY;
    Graph g;
    g.output("y", g.causal_softmax(g.input("x", KILN_F32, s), 0.5f));
    m.add(KILN_OP_CAUSAL_SOFTMAX, str(s) + " with -inf scores", std::move(g), {{"x", x}});
  }
  document_softmax_cases(m);
  for (const Shape& s : {Shape{1, 1}, Shape{17, 17}, Shape{5, 127}, Shape{2, 3, 33, 33}, Shape{4, 12, 64, 64}}) {
    Graph g;
    g.output("dx", g.softmax_grad(g.input("y", KILN_F32, s), g.input("dy", KILN_F32, s), 0.125f));
    m.add(KILN_OP_SOFTMAX_GRAD, str(s), std::move(g), {{"y", m.rng.uniform(s, 0.0f, 1.0f)}, {"dy", m.rng.uniform(s)}});
  }
}

void cross_entropy_cases(CaseMaker& m) {
  struct C {
    int64_t n, v;
  };
  for (C c : {C{1, 1}, C{3, 17}, C{33, 65}, C{64, 1000}, C{5, 50257}}) {
    const std::string what = "N=" + n(c.n) + " V=" + n(c.v);
    graph::HostTensor logits = m.rng.uniform({c.n, c.v}, -6.0f, 6.0f), targets = m.rng.ids({c.n}, c.v);
    {
      Graph g;
      g.output("loss", g.cross_entropy(g.input("logits", KILN_F32, {c.n, c.v}), g.input("targets", KILN_I32, {c.n})));
      m.add(KILN_OP_CROSS_ENTROPY, what, std::move(g), {{"logits", logits}, {"targets", targets}});
    }
    Graph g;
    ValueId l = g.input("logits", KILN_F32, {c.n, c.v}), t = g.input("targets", KILN_I32, {c.n});
    g.output("dlogits", g.cross_entropy_grad(l, t, g.input("dloss", KILN_F32, {1})));
    m.add(KILN_OP_CROSS_ENTROPY_GRAD, what, std::move(g),
          {{"logits", logits}, {"targets", targets}, {"dloss", m.rng.scalar(0.75f)}});
  }
  // -inf logits (masked vocabulary) contribute exactly 0.
  graph::HostTensor logits = m.rng.uniform({4, 37}, -5.0f, 5.0f), targets = m.rng.ids({4}, 37);
  for (int64_t r = 0; r < 4; ++r)
    for (int64_t j = 0; j < 37; j += 3)
      if (j != targets.i32[static_cast<size_t>(r)]) logits.f32[static_cast<size_t>(r * 37 + j)] = -INFINITY;
  {
    Graph g;
    g.output("loss", g.cross_entropy(g.input("logits", KILN_F32, {4, 37}), g.input("targets", KILN_I32, {4})));
    m.add(KILN_OP_CROSS_ENTROPY, "N=4 V=37 with -inf logits", std::move(g), {{"logits", logits}, {"targets", targets}});
  }
  Graph g;
  ValueId l = g.input("logits", KILN_F32, {4, 37}), t = g.input("targets", KILN_I32, {4});
  g.output("dlogits", g.cross_entropy_grad(l, t, g.input("dloss", KILN_F32, {1})));
  m.add(KILN_OP_CROSS_ENTROPY_GRAD, "N=4 V=37 with -inf logits", std::move(g),
        {{"logits", logits}, {"targets", targets}, {"dloss", m.rng.scalar(1.0f)}});
}

// The attention pattern: the gradient of the softmax just computed; and
// rows longer than any work group (OpenCL's GPU code runs one per row).
void softmax_chain_cases(CaseMaker& m) {
  for (const Shape& s : {Shape{2, 3, 33, 33}, Shape{300, 300}}) {
    Graph g;
    ValueId y = g.causal_softmax(g.input("x", KILN_F32, s), 0.3f);
    g.output("y", y);
    g.output("dx", g.softmax_grad(y, g.input("dy", KILN_F32, s), 0.3f));
    m.add(KILN_OP_SOFTMAX_GRAD, str(s) + " of the causal softmax before it", std::move(g),
          {{"x", m.rng.uniform(s, -3.0f, 3.0f)}, {"dy", m.rng.uniform(s)}});
  }
}

// ALIBI over one head and several, odd T and T = 1, leading batch dims,
// negative and zero slopes, one attention-sized case, special values, and
// the MPT pattern (the causal softmax of the biased scores).
void alibi_cases(CaseMaker& m) {
  auto alibi_case = [&](const Shape& s, const graph::HostTensor& x, const graph::HostTensor& slopes,
                        const std::string& what) {
    Graph g;
    g.output("y", g.alibi(g.input("x", KILN_F32, s), g.input("slopes", KILN_F32, slopes.shape)));
    m.add(KILN_OP_ALIBI, str(s) + what, std::move(g), {{"x", x}, {"slopes", slopes}});
  };
  auto slopes_of = [](std::vector<float> v) {
    graph::HostTensor t = graph::HostTensor::zeros(KILN_F32, {static_cast<int64_t>(v.size())});
    t.f32 = std::move(v);
    return t;
  };
  alibi_case({1, 7, 7}, m.rng.uniform({1, 7, 7}), slopes_of({0.5f}), " one head");
  alibi_case({3, 17, 17}, m.rng.uniform({3, 17, 17}), slopes_of({0.25f, 0.0625f, 0.015625f}), " three heads");
  alibi_case({2, 3, 1, 1}, m.rng.uniform({2, 3, 1, 1}), slopes_of({1.0f, -2.0f, 0.5f}), " one position");
  alibi_case({2, 3, 33, 33}, m.rng.uniform({2, 3, 33, 33}, -4.0f, 4.0f), slopes_of({-0.5f, 0.0f, 0.3f}),
             " negative and zero slopes");
  {
    // One draw per statement: the order of a call's arguments is unspecified.
    graph::HostTensor x = m.rng.uniform({2, 2, 3, 9, 9});
    alibi_case({2, 2, 3, 9, 9}, x, m.rng.uniform({3}, 0.0f, 1.0f), " two batch dims");
    x = m.rng.uniform({2, 12, 64, 64}, -4.0f, 4.0f);
    alibi_case({2, 12, 64, 64}, x, m.rng.uniform({12}, 0.0f, 0.5f), " attention-sized");
  }
  {
    // NaN, infinities and masked (-inf) scores propagate; a huge slope
    // overflows the f32 bias to +-inf two or more keys off the diagonal (a
    // bias computed in double would stay finite there), and an infinite one
    // gives inf * 0 = NaN on it.
    graph::HostTensor x = m.rng.uniform({3, 5, 5}, -2.0f, 2.0f);
    x.f32[1] = std::nanf("");  // head 0
    x.f32[7] = INFINITY;
    x.f32[13] = -INFINITY;
    x.f32[30] = -INFINITY;  // head 1, one key off the diagonal
    x.f32[35] = 3e38f;      // head 1, query 2, key 0: 3e38 - inf (finite in double)
    x.f32[54] = -INFINITY;  // head 2, query 0, key 4: -inf - inf
    alibi_case({3, 5, 5}, x, slopes_of({0.5f, 3e38f, -INFINITY}), " with NaN and infinities");
  }
  {
    // x = -bias exactly, so y is exactly 0 when the bias is rounded to f32
    // before the add. A fused multiply-add would leave the product's rounding
    // error instead, and against an all-zero reference any error fails.
    const Shape s{2, 3, 11, 11};
    const graph::HostTensor slopes = slopes_of({0.1f, 1.0f / 3.0f, -0.7f});
    graph::HostTensor x = graph::HostTensor::zeros(KILN_F32, s);
    for (size_t k = 0; k < x.f32.size(); ++k) {
      const auto e = static_cast<int64_t>(k);
      const int64_t j = e % 11, i = e / 11 % 11, h = e / 121 % 3;
      x.f32[k] =
          -static_cast<float>(static_cast<double>(slopes.f32[static_cast<size_t>(h)]) * static_cast<double>(j - i));
    }
    alibi_case(s, x, slopes, " cancelling to exactly 0 (no fused multiply-add)");
  }
  for (const Shape& s : {Shape{1, 17, 17}, Shape{2, 3, 33, 33}}) {
    const int64_t heads = s[s.size() - 3];
    Graph g;
    ValueId biased = g.alibi(g.input("x", KILN_F32, s), g.input("slopes", KILN_F32, {heads}));
    g.output("y", g.causal_softmax(biased, 1.0f));
    m.add(KILN_OP_ALIBI, str(s) + " before the causal softmax", std::move(g),
          {{"x", m.rng.uniform(s, -3.0f, 3.0f)}, {"slopes", m.rng.uniform({heads}, 0.0f, 1.0f)}},
          threshold_for(KILN_OP_CAUSAL_SOFTMAX));
  }
}

// Ids out of range are the caller's bug, and a kernel that read or wrote
// with them would touch memory it does not own: the device must say so.
void invalid_id_cases(CaseMaker& m) {
  {
    graph::HostTensor targets = m.rng.ids({3}, 5);
    targets.i32[2] = 5;
    Graph g;
    g.output("loss", g.cross_entropy(g.input("logits", KILN_F32, {3, 5}), g.input("targets", KILN_I32, {3})));
    m.add_error(KILN_OP_CROSS_ENTROPY, "N=3 V=5 with target 5", std::move(g),
                {{"logits", m.rng.uniform({3, 5})}, {"targets", targets}}, "target");
  }
  {
    graph::HostTensor targets = m.rng.ids({3}, 5);
    targets.i32[0] = -1;
    Graph g;
    ValueId l = g.input("logits", KILN_F32, {3, 5}), t = g.input("targets", KILN_I32, {3});
    g.output("dlogits", g.cross_entropy_grad(l, t, g.input("dloss", KILN_F32, {1})));
    m.add_error(KILN_OP_CROSS_ENTROPY_GRAD, "N=3 V=5 with target -1", std::move(g),
                {{"logits", m.rng.uniform({3, 5})}, {"targets", targets}, {"dloss", m.rng.scalar(1.0f)}}, "target");
  }
  {
    graph::HostTensor ids = m.rng.ids({2}, 4);
    ids.i32[0] = -1;
    Graph g;
    g.output("y", g.embedding(g.input("table", KILN_F32, {4, 3}), g.input("ids", KILN_I32, {2})));
    m.add_error(KILN_OP_EMBEDDING, "V=4 with id -1", std::move(g), {{"table", m.rng.uniform({4, 3})}, {"ids", ids}},
                "");
  }
  graph::HostTensor ids = m.rng.ids({2}, 4);
  ids.i32[1] = 4;
  Graph g;
  g.output("dtable", g.embedding_grad(g.input("dy", KILN_F32, {2, 3}), g.input("ids", KILN_I32, {2}), 4));
  m.add_error(KILN_OP_EMBEDDING_GRAD, "V=4 with id 4", std::move(g), {{"dy", m.rng.uniform({2, 3})}, {"ids", ids}}, "");
}

}  // namespace

void add_linear_cases(Suite& suite) {
  CaseMaker m(suite, 4321);
  matmul_cases(m);
  embedding_cases(m);
  layernorm_cases(m);
  rmsnorm_cases(m);
  softmax_cases(m);
  cross_entropy_cases(m);
  softmax_chain_cases(m);
  invalid_id_cases(m);
  alibi_cases(m);
}

}  // namespace kiln::conformance
