// Built-in cases for ROPE and ROPE_GRAD. The tables are what a Llama model
// feeds: cos and sin of t * base^(-i/R), computed here in double. Shapes
// cover odd head dims with partial rotation (D = 6 with R = 3, D = 9 with
// R = 4, D = 10 with R = 2), one position (T = 1), many rows, rank 4, and
// both pair layouts; special values check that NaN and inf stay in their pair.
#include <cmath>
#include <limits>

#include "graph/conformance/op_cases.h"

namespace kiln::conformance {

using graph::Graph;
using graph::HostTensor;
using graph::Shape;

namespace {

// cos (or sin) of t * 10000^(-i/pairs) for t < positions, i < pairs.
HostTensor rotary_table(int64_t positions, int64_t pairs, bool sine) {
  HostTensor t = HostTensor::zeros(KILN_F32, {positions, pairs});
  for (int64_t p = 0; p < positions; ++p)
    for (int64_t i = 0; i < pairs; ++i) {
      const double angle =
          static_cast<double>(p) * std::pow(10000.0, -static_cast<double>(i) / static_cast<double>(pairs));
      t.f32[static_cast<size_t>(p * pairs + i)] = static_cast<float>(sine ? std::sin(angle) : std::cos(angle));
    }
  return t;
}

struct RopeShape {
  Shape x;  // [..., T, D]
  int64_t pairs;
};

void add_rope(CaseMaker& m, kiln_op op, const std::string& what, const RopeShape& s, bool interleaved, HostTensor x) {
  const int64_t positions = s.x[s.x.size() - 2];
  const Shape table{positions, s.pairs};
  Graph g;
  const graph::ValueId in = g.input("x", KILN_F32, s.x), cos = g.input("cos", KILN_F32, table),
                       sin = g.input("sin", KILN_F32, table);
  g.output("y", op == KILN_OP_ROPE ? g.rope(in, cos, sin, interleaved) : g.rope_grad(in, cos, sin, interleaved));
  m.add(op, what + (interleaved ? " interleaved" : ""), std::move(g),
        {{"x", std::move(x)},
         {"cos", rotary_table(positions, s.pairs, false)},
         {"sin", rotary_table(positions, s.pairs, true)}});
}

void rope_cases(CaseMaker& m) {
  const RopeShape shapes[] = {
      {{1, 2}, 1},        {{4, 6}, 3},        {{3, 5, 10}, 2},    {{2, 7, 9}, 4},
      {{300, 1, 64}, 32}, {{24, 33, 64}, 32}, {{8, 17, 128}, 16}, {{2, 3, 5, 40}, 20},
  };
  for (const RopeShape& s : shapes)
    for (bool interleaved : {false, true})
      for (kiln_op op : {KILN_OP_ROPE, KILN_OP_ROPE_GRAD})
        add_rope(m, op, str(s.x) + " R=" + std::to_string(s.pairs), s, interleaved, m.rng.uniform(s.x, -3.0f, 3.0f));
  // A NaN or inf spoils its pair (and only it); large values stay finite.
  const RopeShape s{{2, 3, 10}, 4};
  HostTensor x = m.rng.uniform(s.x, -3.0f, 3.0f);
  x.f32[1] = std::numeric_limits<float>::quiet_NaN();
  x.f32[13] = std::numeric_limits<float>::infinity();
  x.f32[24] = -std::numeric_limits<float>::infinity();
  x.f32[36] = 1e30f;
  x.f32[41] = -1e30f;
  x.f32[58] = std::numeric_limits<float>::infinity();  // past 2R: copied
  for (bool interleaved : {false, true})
    for (kiln_op op : {KILN_OP_ROPE, KILN_OP_ROPE_GRAD})
      add_rope(m, op, str(s.x) + " R=4 with NaN, inf and 1e30", s, interleaved, x);
}

}  // namespace

void add_rotary_cases(Suite& suite) {
  CaseMaker m(suite, 2718);
  rope_cases(m);
}

}  // namespace kiln::conformance
