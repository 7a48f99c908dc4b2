// Built-in cases for the elementwise ops, the reductions and AdamW. Sizes
// are no multiple of any vector width or work-group size (1, 3, 17, 33, 65,
// 127, ...), plus a few large enough to spread over many threads or groups.
#include <cmath>
#include <string>
#include <vector>

#include "graph/conformance/op_cases.h"

namespace kiln::conformance {

using graph::Graph;
using graph::Shape;
using graph::ValueId;

namespace {

const Shape kShapes[] = {{1}, {3}, {17}, {33, 65}, {127, 129}, {70001}};

void fill_cases(CaseMaker& m) {
  for (const Shape& s : {Shape{1}, Shape{17}, Shape{3, 65}, Shape{127, 33}, Shape{70001}}) {
    Graph g;
    g.output("y", g.fill(s, -2.5f));
    m.add(KILN_OP_FILL, str(s), std::move(g), {});
  }
  // In place over an input: the zeroing of gradient accumulators.
  Graph g;
  g.input("x", KILN_F32, {33, 17});
  g.output("y", g.fill({33, 17}, 0.0f), "x");
  m.add(KILN_OP_FILL, "[33, 17] in place", std::move(g), {{"x", m.rng.uniform({33, 17})}});
}

void add_mul_cases(CaseMaker& m) {
  const std::pair<Shape, Shape> shapes[] = {{{1}, {1}},         {{17}, {17}},       {{3, 17}, {17}},
                                            {{4, 3}, {3}},      {{65, 127}, {127}}, {{2, 3, 33}, {3, 33}},
                                            {{1000, 65}, {65}}, {{70001}, {70001}}, {{129, 1024}, {1024}}};
  for (kiln_op op : {KILN_OP_ADD, KILN_OP_MUL}) {
    for (const auto& [sa, sb] : shapes) {
      Graph g;
      ValueId a = g.input("a", KILN_F32, sa), b = g.input("b", KILN_F32, sb);
      g.output("y", g.add_node(op, {a, b})[0]);
      m.add(op, str(sa) + " " + str(sb), std::move(g), {{"a", m.rng.uniform(sa)}, {"b", m.rng.uniform(sb)}});
    }
    // The output may be the first operand's memory (gradient accumulation).
    Graph g;
    ValueId a = g.input("a", KILN_F32, {33, 65}), b = g.input("b", KILN_F32, {65});
    g.output("y", g.add_node(op, {a, b})[0], "a");
    m.add(op, "[33, 65] [65] in place", std::move(g), {{"a", m.rng.uniform({33, 65})}, {"b", m.rng.uniform({65})}});
  }
}

void unary_cases(CaseMaker& m) {
  for (kiln_op op : {KILN_OP_SCALE, KILN_OP_GELU, KILN_OP_GELU_GRAD}) {
    auto build = [&](Graph& g, const Shape& s) {
      ValueId x = g.input("x", KILN_F32, s);
      if (op == KILN_OP_SCALE) return g.scale(x, -0.37f);
      if (op == KILN_OP_GELU) return g.gelu(x);
      return g.gelu_grad(x, g.input("dy", KILN_F32, s));
    };
    auto inputs = [&](const Shape& s) {
      graph::TensorMap in{{"x", m.rng.uniform(s, -8.0f, 8.0f)}};
      if (op == KILN_OP_GELU_GRAD) in["dy"] = m.rng.uniform(s);
      return in;
    };
    for (const Shape& s : kShapes) {
      Graph g;
      g.output("y", build(g, s));
      m.add(op, str(s), std::move(g), inputs(s));
    }
    Graph g;
    g.output("y", build(g, {33, 65}), "x");
    m.add(op, "[33, 65] in place", std::move(g), inputs({33, 65}));
  }
}

// NaN and infinity propagate as in the reference.
void special_value_cases(CaseMaker& m) {
  const float nan = std::nanf(""), inf = INFINITY;
  graph::HostTensor x = m.rng.uniform({3, 33}, -3.0f, 3.0f), b = m.rng.uniform({33});
  x.f32[5] = nan;
  x.f32[40] = inf;
  b.f32[7] = nan;
  {
    Graph g;
    g.output("y", g.gelu(g.input("x", KILN_F32, {3, 33})));
    m.add(KILN_OP_GELU, "[3, 33] with NaN and +inf", std::move(g), {{"x", x}});
  }
  // Not for gelu: the reference gives gelu(-inf) = -inf * 0 = NaN, the cpu
  // kernels -inf (the limit is 0); the backends agree on everything else.
  x.f32[41] = -inf;
  for (kiln_op op : {KILN_OP_ADD, KILN_OP_MUL}) {
    Graph g;
    ValueId a = g.input("x", KILN_F32, {3, 33}), bv = g.input("b", KILN_F32, {33});
    g.output("y", g.add_node(op, {a, bv})[0]);
    m.add(op, "[3, 33] [33] with NaN and infinities", std::move(g), {{"x", x}, {"b", b}});
  }
  Graph g;
  g.output("y", g.sum_to(g.input("x", KILN_F32, {3, 33}), {33}));
  m.add(KILN_OP_SUM_TO, "[3, 33] -> [33] with NaN and infinities", std::move(g), {{"x", x}});
}

// SILU and CLAMP with their gradients: every size, in place, and the
// special values of each (NaN, both infinities; for SiLU +-100 too, where
// exp(-x) overflows a float).
void silu_clamp_cases(CaseMaker& m) {
  constexpr float kLo = -0.75f, kHi = 1.5f;
  for (kiln_op op : {KILN_OP_SILU, KILN_OP_SILU_GRAD, KILN_OP_CLAMP, KILN_OP_CLAMP_GRAD}) {
    const bool grad = op == KILN_OP_SILU_GRAD || op == KILN_OP_CLAMP_GRAD;
    auto build = [&](Graph& g, const Shape& s) {
      ValueId x = g.input("x", KILN_F32, s);
      ValueId dy = grad ? g.input("dy", KILN_F32, s) : x;
      switch (op) {
        case KILN_OP_SILU: return g.silu(x);
        case KILN_OP_SILU_GRAD: return g.silu_grad(x, dy);
        case KILN_OP_CLAMP: return g.clamp(x, kLo, kHi);
        default: return g.clamp_grad(x, dy, kLo, kHi);
      }
    };
    auto inputs = [&](const Shape& s) {
      graph::TensorMap in{{"x", m.rng.uniform(s, -8.0f, 8.0f)}};
      if (grad) in["dy"] = m.rng.uniform(s);
      return in;
    };
    for (const Shape& s : kShapes) {
      Graph g;
      g.output("y", build(g, s));
      m.add(op, str(s), std::move(g), inputs(s));
    }
    {
      Graph g;
      g.output("y", build(g, {33, 65}), "x");
      m.add(op, "[33, 65] in place", std::move(g), inputs({33, 65}));
    }
    const float nan = std::nanf(""), inf = INFINITY;
    graph::TensorMap in = inputs({3, 33});
    std::vector<float>& x = in["x"].f32;
    x[0] = nan, x[1] = inf, x[2] = -inf, x[3] = 100.0f, x[4] = -100.0f, x[5] = 89.0f, x[6] = -89.0f;
    x[7] = -0.0f;
    // The bounds themselves, and the floats right beside them.
    x[8] = kLo, x[9] = kHi, x[10] = std::nextafter(kLo, -inf), x[11] = std::nextafter(kHi, inf);
    x[12] = std::nextafter(kLo, inf), x[13] = std::nextafter(kHi, -inf);
    if (grad) {
      // A NaN gradient outside the clamp's range is masked to 0, inside it passes.
      x[14] = 5.0f, x[15] = 0.25f;
      in["dy"].f32[14] = nan, in["dy"].f32[15] = nan;
    }
    Graph g;
    g.output("y", build(g, {3, 33}));
    m.add(op, "[3, 33] with NaN, infinities, +-100 and the bounds", std::move(g), in);
  }
  // Equal bounds, bounds no input reaches, and an infinite bound.
  const struct {
    float lo, hi;
    const char* what;
  } bounds[] = {{0.5f, 0.5f, "lo = hi"}, {-1e30f, 1e30f, "wide"}, {-INFINITY, 0.0f, "[-inf, 0]"}};
  for (const auto& b : bounds) {
    Graph g;
    ValueId x = g.input("x", KILN_F32, {17, 9}), dy = g.input("dy", KILN_F32, {17, 9});
    g.output("y", g.clamp(x, b.lo, b.hi));
    g.output("dx", g.clamp_grad(x, dy, b.lo, b.hi));
    m.add(KILN_OP_CLAMP_GRAD, std::string("[17, 9] with its forward, bounds ") + b.what, std::move(g),
          {{"x", m.rng.uniform({17, 9}, -2.0f, 2.0f)}, {"dy", m.rng.uniform({17, 9})}});
  }
  // Llama's SwiGLU, silu(gate) * up, and its backward; MPT's clip of the
  // QKV projection after its bias: the chains a fusing backend fuses.
  {
    Graph g;
    const Shape s{37, 96};
    ValueId gate = g.input("gate", KILN_F32, s), up = g.input("up", KILN_F32, s), dh = g.input("dh", KILN_F32, s);
    g.output("h", g.mul(g.silu(gate), up));
    g.output("dgate", g.silu_grad(gate, g.mul(dh, up)));
    g.output("dup", g.mul(dh, g.silu(gate)));
    m.add(KILN_OP_SILU_GRAD, "in SwiGLU's forward and backward", std::move(g),
          {{"gate", m.rng.uniform(s, -4.0f, 4.0f)}, {"up", m.rng.uniform(s)}, {"dh", m.rng.uniform(s)}});
  }
  Graph g;
  ValueId qkv = g.input("qkv", KILN_F32, {29, 3, 48}), bias = g.input("bias", KILN_F32, {3, 48});
  ValueId dy = g.input("dy", KILN_F32, {29, 3, 48});
  ValueId pre = g.add(qkv, bias);
  g.output("clipped", g.clamp(pre, -2.0f, 2.0f), "qkv");
  g.output("dpre", g.clamp_grad(pre, dy, -2.0f, 2.0f), "dy");
  m.add(KILN_OP_CLAMP, "after a bias add, in place", std::move(g),
        {{"qkv", m.rng.uniform({29, 3, 48}, -3.0f, 3.0f)},
         {"bias", m.rng.uniform({3, 48})},
         {"dy", m.rng.uniform({29, 3, 48})}});
}

void reduction_cases(CaseMaker& m) {
  const std::pair<Shape, Shape> sum_to[] = {{{17}, {17}},      {{3, 17}, {17}},       {{2, 3, 33}, {3, 33}},
                                            {{5000, 3}, {3}},  {{100, 1000}, {1000}}, {{4, 5}, {4, 5}},
                                            {{20000, 1}, {1}}, {{127, 65}, {65}},     {{3000, 24}, {24}}};
  for (const auto& [sx, sy] : sum_to) {
    Graph g;
    g.output("y", g.sum_to(g.input("x", KILN_F32, sx), sy));
    m.add(KILN_OP_SUM_TO, str(sx) + " -> " + str(sy), std::move(g), {{"x", m.rng.uniform(sx)}});
  }
  for (const Shape& s : {Shape{1}, Shape{17}, Shape{33, 65}, Shape{300001}}) {
    Graph g;
    g.output("y", g.sum_squares(g.input("x", KILN_F32, s)));
    m.add(KILN_OP_SUM_SQUARES, str(s), std::move(g), {{"x", m.rng.uniform(s)}});
  }
}

void adamw_cases(CaseMaker& m) {
  for (const Shape& s : {Shape{1}, Shape{17}, Shape{33, 65}, Shape{70001}})
    for (bool wd : {true, false})
      for (bool in_place : {true, false}) {
        Graph g;
        ValueId p = g.input("p", KILN_F32, s), gr = g.input("g", KILN_F32, s);
        ValueId mo = g.input("m", KILN_F32, s), v = g.input("v", KILN_F32, s);
        ValueId hp = g.input("hparams", KILN_F32, {5});
        auto out = g.adamw(p, gr, mo, v, hp, 0.9f, 0.999f, 1e-8f, wd);
        g.output("p_out", out[0], in_place ? "p" : "");
        g.output("m_out", out[1], in_place ? "m" : "");
        g.output("v_out", out[2], in_place ? "v" : "");
        graph::HostTensor hparams = graph::HostTensor::zeros(KILN_F32, {5});
        hparams.f32 = {1e-3f, 0.1f, 1.0f / (1.0f - 0.729f), 1.0f / (1.0f - 0.997003f), 0.5f};
        m.add(KILN_OP_ADAMW, str(s) + (wd ? " wd" : " no-wd") + (in_place ? " in place" : ""), std::move(g),
              {{"p", m.rng.uniform(s)},
               {"g", m.rng.uniform(s)},
               {"m", m.rng.uniform(s, -0.1f, 0.1f)},
               {"v", m.rng.uniform(s, 0.0f, 0.01f)},
               {"hparams", hparams}});
      }
  // ADAMW_CLIP (the low-precision suite runs these with bf16 and f16
  // gradients; test_adamw_clip.cpp checks the rounding itself bit for bit).
  for (const Shape& s : {Shape{1}, Shape{17}, Shape{33, 65}, Shape{70001}})
    for (bool in_place : {true, false}) {
      Graph g;
      ValueId p = g.input("p", KILN_F32, s), gr = g.input("g", KILN_F32, s);
      ValueId mo = g.input("m", KILN_F32, s), v = g.input("v", KILN_F32, s);
      ValueId hp = g.input("hparams", KILN_F32, {5}), clip = g.input("clip", KILN_F32, {1});
      auto out = g.adamw_clip(p, gr, mo, v, hp, clip, 0.9f, 0.999f, 1e-8f, true);
      g.output("p_out", out[0], in_place ? "p" : "");
      g.output("m_out", out[1], in_place ? "m" : "");
      g.output("v_out", out[2], in_place ? "v" : "");
      graph::HostTensor hparams = graph::HostTensor::zeros(KILN_F32, {5});
      hparams.f32 = {1e-3f, 0.1f, 1.0f / (1.0f - 0.729f), 1.0f / (1.0f - 0.997003f), 0.25f};
      graph::HostTensor factor = graph::HostTensor::zeros(KILN_F32, {1});
      factor.f32 = {0.3713f};
      m.add(KILN_OP_ADAMW_CLIP, str(s) + (in_place ? " in place" : ""), std::move(g),
            {{"p", m.rng.uniform(s)},
             {"g", m.rng.uniform(s)},
             {"m", m.rng.uniform(s, -0.1f, 0.1f)},
             {"v", m.rng.uniform(s, 0.0f, 0.01f)},
             {"hparams", hparams},
             {"clip", factor}});
    }
}

// Ops chained in one graph, as the transformer's epilogues are: a backend
// that fuses them into one kernel (OpenCL) is checked on the fused code.
void chain_cases(CaseMaker& m) {
  {
    // Every step writes the input's memory.
    Graph g;
    ValueId x = g.input("x", KILN_F32, {33, 65}), b = g.input("b", KILN_F32, {65});
    g.output("y", g.gelu(g.add(g.scale(x, 3.0f), b)), "x");
    m.add(KILN_OP_GELU, "after scale and add, in place", std::move(g),
          {{"x", m.rng.uniform({33, 65})}, {"b", m.rng.uniform({65})}});
  }
  // Bias + GELU, bias + residual, and a chain whose intermediate also leaves the kernel.
  Graph g;
  ValueId h = g.input("h", KILN_F32, {37, 96}), bias = g.input("bias", KILN_F32, {96});
  ValueId res = g.input("res", KILN_F32, {37, 96});
  ValueId pre = g.add(h, bias);
  g.output("act", g.gelu(pre));
  g.output("pre", pre);
  g.output("resid", g.add(g.add(h, bias), res));
  g.output("grad", g.gelu_grad(pre, g.mul(res, g.scale(h, 0.5f))));
  m.add(KILN_OP_GELU_GRAD, "in the epilogue chains of a layer", std::move(g),
        {{"h", m.rng.uniform({37, 96}, -3.0f, 3.0f)}, {"bias", m.rng.uniform({96})}, {"res", m.rng.uniform({37, 96})}});
}

// The exact GELU and its gradient: every tile size, in place, NaN and both
// infinities (the formula gives gelu_erf(-inf) = -inf * 0 = NaN on every
// backend), and fused after a bias add as the MLP uses it.
void gelu_erf_cases(CaseMaker& m) {
  for (kiln_op op : {KILN_OP_GELU_ERF, KILN_OP_GELU_ERF_GRAD}) {
    auto build = [&](Graph& g, const Shape& s) {
      ValueId x = g.input("x", KILN_F32, s);
      if (op == KILN_OP_GELU_ERF) return g.gelu_erf(x);
      return g.gelu_erf_grad(x, g.input("dy", KILN_F32, s));
    };
    auto inputs = [&](const Shape& s) {
      graph::TensorMap in{{"x", m.rng.uniform(s, -8.0f, 8.0f)}};
      if (op == KILN_OP_GELU_ERF_GRAD) in["dy"] = m.rng.uniform(s);
      return in;
    };
    for (const Shape& s : kShapes) {
      Graph g;
      g.output("y", build(g, s));
      m.add(op, str(s), std::move(g), inputs(s));
    }
    Graph g;
    g.output("y", build(g, {33, 65}), "x");
    m.add(op, "[33, 65] in place", std::move(g), inputs({33, 65}));
    graph::TensorMap special = inputs({3, 33});
    special.at("x").f32[5] = std::nanf("");
    special.at("x").f32[40] = INFINITY;
    special.at("x").f32[41] = -INFINITY;
    Graph gs;
    gs.output("y", build(gs, {3, 33}));
    m.add(op, "[3, 33] with NaN and infinities", std::move(gs), special);
  }
  Graph g;
  ValueId h = g.input("h", KILN_F32, {37, 96}), bias = g.input("bias", KILN_F32, {96});
  ValueId pre = g.add(h, bias);
  g.output("act", g.gelu_erf(pre));
  g.output("grad", g.gelu_erf_grad(pre, g.scale(h, 0.5f)));
  m.add(KILN_OP_GELU_ERF_GRAD, "after a bias add, fused", std::move(g),
        {{"h", m.rng.uniform({37, 96}, -3.0f, 3.0f)}, {"bias", m.rng.uniform({96})}});
}

}  // namespace

// Nine ops in a row (longer than one fused kernel of the Vulkan backend
// holds), the running value as ADD's second operand, broadcast MUL and
// MAXIMUM operands, two intermediates that leave the chain, and one read
// again by a later op. Made last, from a generator of its own, so the
// cases above keep their inputs.
void long_chain_cases(CaseMaker& m) {
  Graph c;
  ValueId x = c.input("x", KILN_F32, {29, 66}), r = c.input("r", KILN_F32, {29, 66});
  ValueId col = c.input("col", KILN_F32, {66}), row = c.input("row", KILN_F32, {66});
  ValueId t = c.gelu_erf(c.add(r, c.scale(x, 0.75f)));  // x * 0.75, then r + that
  ValueId u = c.tanh(c.mul(t, col));
  c.output("t", t);
  ValueId v = c.maximum(c.clamp(c.exp(u), 0.5f, 2.0f), row);
  c.output("y", c.mul(c.add(v, u), t));
  m.add(KILN_OP_MUL, "in a chain of nine with broadcasts and intermediates read again", std::move(c),
        {{"x", m.rng.uniform({29, 66}, -2.0f, 2.0f)},
         {"r", m.rng.uniform({29, 66})},
         {"col", m.rng.uniform({66})},
         {"row", m.rng.uniform({66}, 0.0f, 2.0f)}});
}

void add_elementwise_cases(Suite& suite) {
  CaseMaker m(suite, 1234);
  fill_cases(m);
  add_mul_cases(m);
  unary_cases(m);
  special_value_cases(m);
  silu_clamp_cases(m);
  reduction_cases(m);
  adamw_cases(m);
  chain_cases(m);
  gelu_erf_cases(m);
  CaseMaker chains(suite, 1235);
  long_chain_cases(chains);
}

}  // namespace kiln::conformance
