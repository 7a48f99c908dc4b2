// Built-in cases for the data-movement ops, in f32, i32, bf16 and f16 (the
// 16-bit ones on random bit patterns, NaNs of every payload included):
// these must be bit exact. Permutations include size-1 dims, rank 6, and the
// [B,T,H,D] <-> [B,H,T,D] moves attention makes.
#include "graph/conformance/op_cases.h"

namespace kiln::conformance {

using graph::Graph;
using graph::Shape;
using graph::ValueId;

namespace {

const char* dtype_name(kiln_dtype dt) { return kiln_dtype_name(dt); }

constexpr kiln_dtype kLayoutDtypes[] = {KILN_F32, KILN_I32, KILN_BF16, KILN_F16};

graph::HostTensor data(CaseMaker& m, kiln_dtype dt, const Shape& s) {
  if (dt == KILN_F32) return m.rng.uniform(s);
  if (dt == KILN_I32) return m.rng.ids(s, 1 << 30);
  graph::HostTensor t = graph::HostTensor::zeros(dt, s);
  const graph::HostTensor patterns = m.rng.ids(s, 1 << 16);
  for (size_t i = 0; i < t.bits.size(); ++i) t.bits[i] = static_cast<uint16_t>(patterns.i32[i]);
  t.widen_bits();
  return t;
}

void reshape_cases(CaseMaker& m) {
  const std::pair<Shape, Shape> shapes[] = {{{3, 17}, {51}}, {{1}, {1, 1}}, {{2, 65, 3}, {130, 3}}};
  for (const auto& [from, to] : shapes)
    for (kiln_dtype dt : kLayoutDtypes) {
      Graph g;
      g.output("y", g.reshape(g.input("x", dt, from), to));
      m.add(KILN_OP_RESHAPE, str(from) + " -> " + str(to) + " " + dtype_name(dt), std::move(g),
            {{"x", data(m, dt, from)}});
    }
  // Between two nodes the RESHAPE's input and output are arena values, and
  // the memory planner gives them the same bytes (docs/PLUGIN_GUIDE.md,
  // section 5): a plugin that copies, or assumes outputs never alias, is
  // caught here. Scaling by powers of two keeps the result exact.
  for (const auto& [from, to] : shapes) {
    Graph g;
    g.output("y", g.scale(g.reshape(g.scale(g.input("x", KILN_F32, from), 0.5f), to), 4.0f));
    m.add(KILN_OP_RESHAPE, "aliased in the arena " + str(from) + " -> " + str(to) + " f32", std::move(g),
          {{"x", data(m, KILN_F32, from)}});
  }
}

void permute_cases(CaseMaker& m) {
  const std::pair<Shape, std::vector<int64_t>> cases[] = {{{2, 3, 4, 5}, {0, 2, 1, 3}},
                                                          {{2, 3, 4, 5}, {0, 1, 3, 2}},
                                                          {{2, 3, 4, 5}, {3, 2, 1, 0}},
                                                          {{2, 3, 4, 5}, {2, 0, 3, 1}},
                                                          {{17, 33}, {1, 0}},
                                                          {{65, 127}, {1, 0}},
                                                          {{2, 65, 3, 17}, {0, 2, 1, 3}},
                                                          {{1, 5, 1, 7}, {3, 2, 1, 0}},
                                                          {{1, 1}, {1, 0}},
                                                          {{2, 3, 1, 2, 3, 2}, {5, 1, 3, 0, 4, 2}},
                                                          {{4, 64, 12, 64}, {0, 2, 1, 3}},
                                                          {{4, 12, 64, 64}, {0, 1, 3, 2}}};
  for (const auto& [s, perm] : cases)
    for (kiln_dtype dt : kLayoutDtypes) {
      Graph g;
      g.output("y", g.permute(g.input("x", dt, s), perm));
      std::string p;
      for (int64_t v : perm) p.append(p.empty() ? "" : " ").append(std::to_string(v));
      m.add(KILN_OP_PERMUTE, str(s) + " perm " + p + " " + dtype_name(dt), std::move(g), {{"x", data(m, dt, s)}});
    }
}

void split_concat_cases(CaseMaker& m) {
  struct S {
    Shape shape;
    int64_t axis, parts;
  };
  for (const S& c : {S{{6, 4}, 0, 3}, S{{3, 12}, 1, 4}, S{{2, 3, 99}, 2, 3}, S{{5}, 0, 5}, S{{64, 2304}, 1, 3}})
    for (kiln_dtype dt : kLayoutDtypes) {
      const std::string what = str(c.shape) + " axis " + std::to_string(c.axis) + " " + dtype_name(dt);
      Shape part = c.shape;
      part[static_cast<size_t>(c.axis)] /= c.parts;
      {
        Graph g;
        auto parts = g.split(g.input("x", dt, c.shape), c.axis, c.parts);
        for (size_t i = 0; i < parts.size(); ++i) g.output("part" + std::to_string(i), parts[i]);
        m.add(KILN_OP_SPLIT, what + " into " + std::to_string(c.parts), std::move(g), {{"x", data(m, dt, c.shape)}});
      }
      Graph g;
      std::vector<ValueId> xs;
      graph::TensorMap in;
      for (int64_t i = 0; i < c.parts; ++i) {
        const std::string name = std::string("x").append(std::to_string(i));
        xs.push_back(g.input(name, dt, part));
        in[name] = data(m, dt, part);
      }
      g.output("y", g.concat(xs, c.axis));
      m.add(KILN_OP_CONCAT, what + " from " + std::to_string(c.parts), std::move(g), std::move(in));
    }
  // Unequal parts, along both axes.
  Graph g;
  ValueId a = g.input("a", KILN_F32, {3, 4}), b = g.input("b", KILN_F32, {1, 4});
  ValueId c = g.input("c", KILN_F32, {2, 4}), d = g.input("d", KILN_F32, {6, 5});
  ValueId e = g.input("e", KILN_F32, {6, 1});
  ValueId rows = g.concat({a, b, c}, 0);
  g.output("rows", rows);
  g.output("cols", g.concat({rows, d, e}, 1));
  m.add(KILN_OP_CONCAT, "unequal parts", std::move(g),
        {{"a", m.rng.uniform({3, 4})},
         {"b", m.rng.uniform({1, 4})},
         {"c", m.rng.uniform({2, 4})},
         {"d", m.rng.uniform({6, 5})},
         {"e", m.rng.uniform({6, 1})}});
}

}  // namespace

void add_layout_cases(Suite& suite) {
  CaseMaker m(suite, 2718);
  reshape_cases(m);
  permute_cases(m);
  split_concat_cases(m);
}

}  // namespace kiln::conformance
