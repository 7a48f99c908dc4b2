// Built-in cases for the math primitives (EXP, LOG, TANH, ERF, MAXIMUM, SELECT):
// sizes off every vector width, in place, a range near zero (where a
// formula like 1 - e^(-2u) loses its digits), and the special values each
// op's row states.
#include <cmath>
#include <string>
#include <vector>

#include "graph/conformance/op_cases.h"

namespace kiln::conformance {

using graph::Graph;
using graph::Shape;
using graph::ValueId;

namespace {

const Shape kMathShapes[] = {{1}, {3}, {17}, {33, 65}, {127, 129}, {70001}};

struct Unary {
  kiln_op op;
  float lo, hi;  // the input range of the sized cases
};

void unary_cases(CaseMaker& m) {
  // LOG over positive inputs; its special values below cover 0 and below.
  const Unary ops[] = {{KILN_OP_EXP, -10.0f, 10.0f},
                       {KILN_OP_LOG, 1e-3f, 1e3f},
                       {KILN_OP_TANH, -6.0f, 6.0f},
                       {KILN_OP_ERF, -4.0f, 4.0f}};
  for (const Unary& u : ops) {
    auto one = [&](const Shape& s, const std::string& what, graph::HostTensor x, bool in_place) {
      Graph g;
      ValueId in = g.input("x", KILN_F32, s);
      g.output("y", g.add_node(u.op, {in})[0], in_place ? "x" : "");
      m.add(u.op, what, std::move(g), {{"x", std::move(x)}});
    };
    for (const Shape& s : kMathShapes) one(s, str(s), m.rng.uniform(s, u.lo, u.hi), false);
    one({33, 65}, "[33, 65] in place", m.rng.uniform({33, 65}, u.lo, u.hi), true);
    if (u.op != KILN_OP_LOG) one({127}, "[127] near zero", m.rng.uniform({127}, -0.01f, 0.01f), false);
    // NaN, both infinities, both zeros, the largest float, a tiny one and -1
    // (denormals are left out: GPU drivers may flush them).
    graph::HostTensor x = m.rng.uniform({3, 33}, u.lo, u.hi);
    const float special[] = {std::nanf(""), INFINITY, -INFINITY, 0.0f, -0.0f, 3.4e38f, 1e-30f, -1.0f};
    for (size_t k = 0; k < std::size(special); ++k) x.f32[k * 11] = special[k];
    one({3, 33}, "[3, 33] with NaN, infinities, zeros, 3.4e38, 1e-30, -1", std::move(x), false);
  }
}

void max_cases(CaseMaker& m) {
  const std::pair<Shape, Shape> shapes[] = {{{1}, {1}},         {{17}, {17}},       {{3, 17}, {17}},
                                            {{65, 127}, {127}}, {{70001}, {70001}}, {{2, 3, 33}, {3, 33}},
                                            {{1000, 65}, {65}}};
  for (const auto& [sa, sb] : shapes) {
    Graph g;
    g.output("y", g.maximum(g.input("a", KILN_F32, sa), g.input("b", KILN_F32, sb)));
    m.add(KILN_OP_MAXIMUM, str(sa) + " " + str(sb), std::move(g), {{"a", m.rng.uniform(sa)}, {"b", m.rng.uniform(sb)}});
  }
  {
    Graph g;
    ValueId a = g.input("a", KILN_F32, {33, 65});
    g.output("y", g.maximum(a, g.input("b", KILN_F32, {65})), "a");
    m.add(KILN_OP_MAXIMUM, "[33, 65] [65] in place", std::move(g),
          {{"a", m.rng.uniform({33, 65})}, {"b", m.rng.uniform({65})}});
  }
  // NaN on either side gives NaN; ties (and -0 against +0) give a.
  graph::HostTensor a = m.rng.uniform({3, 33}), b = m.rng.uniform({3, 33});
  a.f32[0] = std::nanf(""), b.f32[1] = std::nanf(""), a.f32[2] = -0.0f, b.f32[2] = 0.0f;
  a.f32[3] = 0.0f, b.f32[3] = -0.0f, b.f32[4] = a.f32[4], a.f32[5] = -INFINITY, b.f32[6] = INFINITY;
  Graph g;
  g.output("y", g.maximum(g.input("a", KILN_F32, {3, 33}), g.input("b", KILN_F32, {3, 33})));
  m.add(KILN_OP_MAXIMUM, "[3, 33] with NaN, signed zeros, ties, infinities", std::move(g), {{"a", a}, {"b", b}});
}

void select_cases(CaseMaker& m) {
  auto inputs = [&](const Shape& s) {
    return graph::TensorMap{
        {"a", m.rng.uniform(s)}, {"b", m.rng.uniform(s)}, {"x", m.rng.uniform(s)}, {"y", m.rng.uniform(s)}};
  };
  auto build = [&](Graph& g, const Shape& s) {
    return g.select(g.input("a", KILN_F32, s), g.input("b", KILN_F32, s), g.input("x", KILN_F32, s),
                    g.input("y", KILN_F32, s));
  };
  for (const Shape& s : kMathShapes) {
    Graph g;
    g.output("z", build(g, s));
    m.add(KILN_OP_SELECT, str(s), std::move(g), inputs(s));
  }
  {
    Graph g;
    g.output("z", build(g, {33, 65}), "x");
    m.add(KILN_OP_SELECT, "[33, 65] in place", std::move(g), inputs({33, 65}));
  }
  // Equal a and b pick x; a NaN on either side picks y; x and y pass NaN
  // and infinities through unchanged.
  graph::TensorMap in = inputs({3, 33});
  std::vector<float>&a = in["a"].f32, &b = in["b"].f32, &x = in["x"].f32, &y = in["y"].f32;
  a[0] = b[0], a[1] = std::nanf(""), b[2] = std::nanf(""), a[3] = -0.0f, b[3] = 0.0f;
  x[4] = std::nanf(""), y[5] = INFINITY, a[6] = -INFINITY, b[7] = -INFINITY;
  Graph g;
  g.output("z", build(g, {3, 33}));
  m.add(KILN_OP_SELECT, "[3, 33] with ties, NaN and infinities", std::move(g), in);
}

}  // namespace

void add_math_cases(Suite& suite) {
  CaseMaker m(suite, 4701);
  unary_cases(m);
  max_cases(m);
  select_cases(m);
}

}  // namespace kiln::conformance
