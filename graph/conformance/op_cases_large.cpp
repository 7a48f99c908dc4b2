// check-backend --large: cases above 2^20 elements, where a kernel's 32-bit
// index arithmetic, a one-dimensional launch limit or a buffer-size limit
// starts to matter. The built-in cases stay below 100k elements so that the
// default run takes seconds; these take longer on the reference interpreter
// and are only added on request.
#include "graph/conformance/large_cases.h"

#include "graph/conformance/op_cases.h"

namespace kiln::conformance {

using graph::Graph;
using graph::ValueId;

namespace {

// Each large case is one node: grouped under that node's op.
void add_one(CaseMaker& m, const std::string& what, Graph g, graph::TensorMap inputs) {
  const kiln_op op = g.nodes().back().op;
  m.add(op, "large " + what, std::move(g), std::move(inputs));
}

}  // namespace

void add_large_cases(Suite& suite) {
  CaseMaker m(suite, 1048577);
  constexpr int64_t kPast = (int64_t{1} << 20) + 1;  // the first size past 2^20 elements
  {
    Graph g;
    g.output("y", g.gelu(g.input("x", KILN_F32, {kPast})));
    add_one(m, "[" + std::to_string(kPast) + "]", std::move(g), {{"x", m.rng.uniform({kPast})}});
  }
  {
    Graph g;
    g.output("y", g.scale(g.input("x", KILN_F32, {2, kPast}), 0.5f));
    add_one(m, str({2, kPast}), std::move(g), {{"x", m.rng.uniform({2, kPast})}});
  }
  {  // broadcast over 1025 rows of 1025
    Graph g;
    g.output("y", g.add(g.input("a", KILN_F32, {1025, 1025}), g.input("b", KILN_F32, {1025})));
    add_one(m, "[1025, 1025] + [1025]", std::move(g),
            {{"a", m.rng.uniform({1025, 1025})}, {"b", m.rng.uniform({1025})}});
  }
  {
    Graph g;
    g.output("y", g.permute(g.input("x", KILN_F32, {1025, 1024}), {1, 0}));
    add_one(m, "[1025, 1024] perm 1 0", std::move(g), {{"x", m.rng.uniform({1025, 1024})}});
  }
  {
    Graph g;
    ValueId x = g.input("x", KILN_F32, {1025, 1024}), gamma = g.input("gamma", KILN_F32, {1024});
    g.output("y", g.layernorm(x, gamma, g.input("beta", KILN_F32, {1024}), 1e-5f));
    add_one(m, "[1025, 1024]", std::move(g),
            {{"x", m.rng.uniform({1025, 1024})}, {"gamma", m.rng.uniform({1024})}, {"beta", m.rng.uniform({1024})}});
  }
  {  // 1025 x 1025 outputs from a short inner dimension
    Graph g;
    g.output("y", g.matmul(g.input("a", KILN_F32, {1025, 64}), g.input("b", KILN_F32, {64, 1025})));
    add_one(m, "[1025, 64] x [64, 1025]", std::move(g),
            {{"a", m.rng.uniform({1025, 64})}, {"b", m.rng.uniform({64, 1025})}});
  }
  {  // a GPT-2 vocabulary's logits for 21 tokens
    Graph g;
    g.output("loss", g.cross_entropy(g.input("logits", KILN_F32, {21, 50257}), g.input("targets", KILN_I32, {21})));
    add_one(m, "N=21 V=50257", std::move(g),
            {{"logits", m.rng.uniform({21, 50257}, -6.0f, 6.0f)}, {"targets", m.rng.ids({21}, 50257)}});
  }
}

}  // namespace kiln::conformance
