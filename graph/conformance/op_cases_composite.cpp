// Built-in cases for the composite ops (graph/ops/op_def.h's decompose):
// SQUARED_RELU and ATTENTION, with their gradients.
// A backend that lists a composite runs its own kernel on them; any other
// runs the decomposition the executor expands, so the same cases hold the
// decomposition to the reference on every backend that lacks the kernel
// (tests/unit/test_decompose.cpp holds it to the reference on the host too).
#include <cmath>
#include <string>
#include <vector>

#include "graph/conformance/op_cases.h"

namespace kiln::conformance {

using graph::Graph;
using graph::Shape;
using graph::ValueId;

namespace {

// SQUARED_RELU and its gradient: sizes off every vector width, in place,
// special values, and the MLP chain it sits in (bias add, then activation).
void squared_relu_cases(CaseMaker& m) {
  for (kiln_op op : {KILN_OP_SQUARED_RELU, KILN_OP_SQUARED_RELU_GRAD}) {
    const bool grad = op == KILN_OP_SQUARED_RELU_GRAD;
    auto build = [&](Graph& g, const Shape& s) {
      ValueId x = g.input("x", KILN_F32, s);
      return grad ? g.squared_relu_grad(x, g.input("dy", KILN_F32, s)) : g.squared_relu(x);
    };
    auto inputs = [&](const Shape& s) {
      graph::TensorMap in{{"x", m.rng.uniform(s, -4.0f, 4.0f)}};
      if (grad) in["dy"] = m.rng.uniform(s);
      return in;
    };
    for (const Shape& s : {Shape{1}, Shape{3}, Shape{17}, Shape{33, 65}, Shape{127, 129}, Shape{70001}}) {
      Graph g;
      g.output("y", build(g, s));
      m.add(op, str(s), std::move(g), inputs(s));
    }
    {
      Graph g;
      g.output("y", build(g, {33, 65}), "x");
      m.add(op, "[33, 65] in place", std::move(g), inputs({33, 65}));
    }
    // NaN stays NaN; +inf squares to +inf; -inf, -0 and the negatives give
    // 0; 1e20 squares past the float range; the smallest positive floats.
    const float nan = std::nanf(""), inf = INFINITY;
    graph::TensorMap in = inputs({3, 33});
    std::vector<float>& x = in["x"].f32;
    x[0] = nan, x[1] = inf, x[2] = -inf, x[3] = -0.0f, x[4] = 0.0f, x[5] = 1e20f, x[6] = -1e20f;
    x[7] = 1e-20f, x[8] = std::nextafter(0.0f, 1.0f);
    Graph g;
    g.output("y", build(g, {3, 33}));
    m.add(op, "[3, 33] with NaN, infinities, zeros and overflow", std::move(g), in);
  }
  // Megatron's MLP with --squared-relu: fc1's bias add, the activation, and
  // its backward through the same pre-activation.
  Graph g;
  ValueId h = g.input("h", KILN_F32, {37, 96}), bias = g.input("bias", KILN_F32, {96});
  ValueId dy = g.input("dy", KILN_F32, {37, 96});
  ValueId pre = g.add(h, bias);
  g.output("act", g.squared_relu(pre));
  g.output("grad", g.squared_relu_grad(pre, dy));
  m.add(KILN_OP_SQUARED_RELU_GRAD, "after a bias add, with its forward", std::move(g),
        {{"h", m.rng.uniform({37, 96}, -3.0f, 3.0f)}, {"bias", m.rng.uniform({96})}, {"dy", m.rng.uniform({37, 96})}});
}

// An attention gradient case's outputs: the forward's y beside dq, dk, dv.
void output_attention_pair(Graph& g, ValueId y, const std::vector<ValueId>& d) {
  g.output("y", y);
  g.output("dq", d[0]);
  g.output("dk", d[1]);
  g.output("dv", d[2]);
}

// ATTENTION and its gradient: one head, T = 1 and odd T (no multiple of a
// kernel's query or key block), head sizes 1 to 128 (120: no power of two),
// long rows (300 keys: many key tiles in each loop of a kernel), batches of
// heads, a negative scale, and the pair as the model uses them (the forward
// and the gradient of the same q, k and v).
void attention_cases(CaseMaker& m) {
  struct C {
    Shape s;
    float scale;
  };
  const std::vector<C> cases{{{1, 1, 1}, 0.5f},        {{1, 17, 8}, 0.35f},     {{3, 33, 16}, 0.25f},
                             {{2, 4, 65, 64}, 0.125f}, {{2, 130, 128}, 0.088f}, {{5, 9, 7}, -0.4f},
                             {{1, 300, 120}, 0.09f}};
  for (const C& c : cases) {
    const std::string what = str(c.s) + " scale " + std::to_string(c.scale);
    graph::TensorMap in{
        {"q", m.rng.uniform(c.s, -1.5f, 1.5f)}, {"k", m.rng.uniform(c.s, -1.5f, 1.5f)}, {"v", m.rng.uniform(c.s)}};
    {
      Graph g;
      ValueId q = g.input("q", KILN_F32, c.s), k = g.input("k", KILN_F32, c.s), v = g.input("v", KILN_F32, c.s);
      g.output("y", g.attention(q, k, v, c.scale));
      m.add(KILN_OP_ATTENTION, what, std::move(g), in);
    }
    Graph g;
    ValueId q = g.input("q", KILN_F32, c.s), k = g.input("k", KILN_F32, c.s), v = g.input("v", KILN_F32, c.s);
    const ValueId y = g.attention(q, k, v, c.scale);
    const std::vector<ValueId> d = g.attention_grad(q, k, v, g.input("dy", KILN_F32, c.s), c.scale);
    output_attention_pair(g, y, d);
    in["dy"] = m.rng.uniform(c.s);
    m.add(KILN_OP_ATTENTION_GRAD, what + " after its forward", std::move(g), in);
  }
}

// DROPOUT_KEYED's key: {seed, step, offset_lo, offset_hi, site}.
graph::HostTensor dropout_key(uint32_t seed, uint32_t step, uint64_t offset, uint32_t site) {
  graph::HostTensor t = graph::HostTensor::zeros(KILN_I32, {5});
  t.i32 = {static_cast<int32_t>(seed), static_cast<int32_t>(step), static_cast<int32_t>(static_cast<uint32_t>(offset)),
           static_cast<int32_t>(static_cast<uint32_t>(offset >> 32)), static_cast<int32_t>(site)};
  return t;
}

// ATTENTION_DROPOUT and its gradient: the mask of each (query, key) pair
// comes from the element index of the [..., T, T] probabilities, so the
// shapes cover several matrices (the index crosses matrices), odd T, long
// rows, a tensor-parallel shard's period and stride with an offset past
// 2^32, p = 0 (ATTENTION's values), and a high p with all-ones key words.
void attention_dropout_cases(CaseMaker& m) {
  struct C {
    Shape s;
    float scale, p;
    int64_t heads_of_stride;  // the stride in matrices (0: the whole tensor)
    graph::HostTensor key;
  };
  const std::vector<C> cases{
      {{1, 1, 1}, 0.5f, 0.5f, 0, dropout_key(1, 2, 0, 3)},
      {{3, 33, 16}, 0.25f, 0.1f, 0, dropout_key(1234, 7, 0, 11)},
      {{2, 4, 65, 64}, 0.125f, 0.1f, 12, dropout_key(42, 3, (uint64_t{1} << 32) + 4 * 65 * 65, 5)},
      {{1, 300, 120}, 0.09f, 0.3f, 0, dropout_key(9, 1, 0, 7)},
      {{5, 9, 7}, -0.4f, 0.0f, 0, dropout_key(5, 5, 0, 5)},
      {{2, 17, 8}, 0.35f, 0.9f, 0, dropout_key(0xFFFFFFFFu, 0xFFFFFFFFu, ~uint64_t{0} - 7, 0xFFFFFFFFu)}};
  for (const C& c : cases) {
    const int64_t T = c.s[c.s.size() - 2], mats = graph::numel(c.s) / (T * c.s.back());
    const int64_t period = mats * T * T, stride = c.heads_of_stride ? c.heads_of_stride * T * T : period;
    const std::string what =
        str(c.s) + " scale " + std::to_string(c.scale) + " p " + std::to_string(c.p) +
        (c.heads_of_stride ? " period " + std::to_string(period) + " stride " + std::to_string(stride) : "");
    graph::TensorMap in{{"q", m.rng.uniform(c.s, -1.5f, 1.5f)},
                        {"k", m.rng.uniform(c.s, -1.5f, 1.5f)},
                        {"v", m.rng.uniform(c.s)},
                        {"key", c.key}};
    {
      Graph g;
      ValueId q = g.input("q", KILN_F32, c.s), k = g.input("k", KILN_F32, c.s), v = g.input("v", KILN_F32, c.s);
      ValueId key = g.input("key", KILN_I32, {5});
      g.output("y", g.attention_dropout(q, k, v, key, c.scale, c.p, period, stride));
      m.add(KILN_OP_ATTENTION_DROPOUT, what, std::move(g), in);
    }
    Graph g;
    ValueId q = g.input("q", KILN_F32, c.s), k = g.input("k", KILN_F32, c.s), v = g.input("v", KILN_F32, c.s);
    ValueId key = g.input("key", KILN_I32, {5});
    const ValueId y = g.attention_dropout(q, k, v, key, c.scale, c.p, period, stride);
    const std::vector<ValueId> d =
        g.attention_dropout_grad(q, k, v, g.input("dy", KILN_F32, c.s), key, c.scale, c.p, period, stride);
    output_attention_pair(g, y, d);
    in["dy"] = m.rng.uniform(c.s);
    m.add(KILN_OP_ATTENTION_DROPOUT_GRAD, what + " after its forward", std::move(g), in);
  }
}

}  // namespace

void add_composite_cases(Suite& suite) {
  CaseMaker m(suite, 4401);
  squared_relu_cases(m);
  attention_cases(m);
  attention_dropout_cases(m);
}

}  // namespace kiln::conformance
