// Built-in cases for DROPOUT and DROPOUT_KEYED. Their tolerance is EXACT: the mask is integer
// arithmetic and the product one fp32 multiply, so every backend must match
// the reference (kiln/philox.h) bit for bit, and hence every other backend.
// Keys cover the 64-bit index arithmetic a backend may do in 32-bit words:
// offsets across 2^32 and wrapping at 2^64, and all-ones seeds and sites.
// Every DROPOUT case has a DROPOUT_KEYED twin with the site in its key: the
// reference gives both the same bits, so a backend must too.
#include <cmath>
#include <cstdint>

#include "graph/conformance/op_cases.h"

namespace kiln::conformance {

using graph::Graph;
using graph::Shape;
using graph::ValueId;

namespace {

graph::HostTensor key(uint32_t seed, uint32_t step, uint64_t offset) {
  graph::HostTensor t = graph::HostTensor::zeros(KILN_I32, {4});
  t.i32 = {static_cast<int32_t>(seed), static_cast<int32_t>(step), static_cast<int32_t>(static_cast<uint32_t>(offset)),
           static_cast<int32_t>(static_cast<uint32_t>(offset >> 32))};
  return t;
}

// DROPOUT_KEYED's key: DROPOUT's with the site as word 4.
graph::HostTensor with_site(graph::HostTensor k, int64_t site) {
  k.shape = {5};
  k.i32.push_back(static_cast<int32_t>(static_cast<uint32_t>(site)));
  return k;
}

struct Block {
  int64_t period = 0, stride = 0;  // 0: the whole tensor
};

void add_case(CaseMaker& m, const std::string& what, const Shape& s, float p, int64_t site, Block b,
              const graph::HostTensor& k, bool in_place = false) {
  const int64_t n = graph::numel(s), period = b.period ? b.period : n, stride = b.stride ? b.stride : n;
  const graph::HostTensor x = m.rng.uniform(s, -4.0f, 4.0f);
  Graph g;
  ValueId xv = g.input("x", KILN_F32, s), kv = g.input("key", KILN_I32, {4});
  g.output("y", g.dropout(xv, kv, p, site, period, stride), in_place ? "x" : "");
  m.add(KILN_OP_DROPOUT, what, std::move(g), {{"x", x}, {"key", k}});
  Graph keyed;
  xv = keyed.input("x", KILN_F32, s), kv = keyed.input("key", KILN_I32, {5});
  keyed.output("y", keyed.dropout_keyed(xv, kv, p, period, stride), in_place ? "x" : "");
  m.add(KILN_OP_DROPOUT_KEYED, what, std::move(keyed), {{"x", x}, {"key", with_site(k, site)}});
}

void size_cases(CaseMaker& m) {
  for (const Shape& s : {Shape{1}, Shape{3}, Shape{17}, Shape{33, 65}, Shape{127, 129}, Shape{70001}})
    add_case(m, str(s) + " p=0.5", s, 0.5f, 1, {}, key(1234, 7, 0));
  add_case(m, "[33, 65] p=0 (the identity)", {33, 65}, 0.0f, 2, {}, key(1, 2, 0));
  add_case(m, "[127, 129] p=0.9", {127, 129}, 0.9f, 3, {}, key(99, 100, 0));
  add_case(m, "[3, 33] p=0.1", {3, 33}, 0.1f, 4, {}, key(5, 0, 0));
  add_case(m, "[33, 65] p=0.5 in place", {33, 65}, 0.5f, 5, {}, key(8, 9, 0), true);
}

void index_cases(CaseMaker& m) {
  // A rank's column block of attention probabilities: [B, H_local T T] out
  // of [B, H T T], rank 1 of 4 (T = 3, H_local = 2: period 18, stride 72).
  add_case(m, "[5, 18] column block of [5, 72], rank 1", {5, 18}, 0.5f, 6, {18, 72}, key(3, 4, 18));
  add_case(m, "[7, 45] period 45 stride 180", {7, 45}, 0.25f, 7, {45, 180}, key(11, 12, 90));
  add_case(m, "[33, 17] offset across 2^32", {33, 17}, 0.5f, 8, {}, key(21, 22, (uint64_t{1} << 32) - 250));
  add_case(m, "[33, 17] offset above 2^32", {33, 17}, 0.5f, 9, {17, 1000}, key(23, 24, (uint64_t{3} << 32) + 5));
  add_case(m, "[65, 3] index wrapping at 2^64, all-ones key", {65, 3}, 0.5f, int64_t{UINT32_MAX}, {3, 7},
           key(UINT32_MAX, UINT32_MAX, UINT64_MAX - 300));
  add_case(m, "[17, 65] stride above 2^32", {17, 65}, 0.5f, 10, {65, (int64_t{1} << 32) + 3}, key(31, 32, 77));
}

// NaN stays NaN when dropped (0 * NaN) and infinities become NaN there, as
// in PyTorch: the op is one multiply by the mask's factor.
void special_value_cases(CaseMaker& m) {
  graph::HostTensor x = m.rng.uniform({3, 33}, -3.0f, 3.0f);
  for (size_t i = 0; i < x.f32.size(); i += 5) x.f32[i] = std::nanf("");
  for (size_t i = 1; i < x.f32.size(); i += 7) x.f32[i] = INFINITY;
  for (size_t i = 2; i < x.f32.size(); i += 11) x.f32[i] = -INFINITY;
  x.f32[3] = 0.0f;
  x.f32[4] = -0.0f;
  x.f32[6] = 1.5e38f;  // twice it still fits a float
  const char* what = "[3, 33] with NaN, infinities, signed zeros and large values";
  Graph g;
  g.output("y", g.dropout(g.input("x", KILN_F32, {3, 33}), g.input("key", KILN_I32, {4}), 0.5f, 11));
  m.add(KILN_OP_DROPOUT, what, std::move(g), {{"x", x}, {"key", key(41, 42, 0)}});
  Graph keyed;
  keyed.output("y", keyed.dropout_keyed(keyed.input("x", KILN_F32, {3, 33}), keyed.input("key", KILN_I32, {5}), 0.5f));
  m.add(KILN_OP_DROPOUT_KEYED, what, std::move(keyed), {{"x", x}, {"key", with_site(key(41, 42, 0), 11)}});
}

// Dropout between other elementwise ops, as in a layer's epilogue (a fusing
// backend checks it in its fused kernel), and two sites sharing one key.
// Every op in it is one correctly rounded fp32 operation per element, so the
// chain too must match bit for bit.
void chain_cases(CaseMaker& m) {
  Graph g;
  ValueId h = g.input("h", KILN_F32, {37, 96}), bias = g.input("bias", KILN_F32, {96});
  ValueId res = g.input("res", KILN_F32, {37, 96}), kv = g.input("key", KILN_I32, {4});
  ValueId dropped = g.dropout(g.add(h, bias), kv, 0.1f, 12);
  g.output("y", g.add(dropped, res));
  g.output("attn", g.dropout(g.scale(h, 0.5f), kv, 0.1f, 13));
  const graph::HostTensor hv = m.rng.uniform({37, 96}), biasv = m.rng.uniform({96}), resv = m.rng.uniform({37, 96});
  m.add(KILN_OP_DROPOUT, "in an epilogue chain, two sites", std::move(g),
        {{"h", hv}, {"bias", biasv}, {"res", resv}, {"key", key(51, 52, 0)}});
  // The keyed form: two keys that differ only in their site, as a layer's.
  Graph keyed;
  h = keyed.input("h", KILN_F32, {37, 96}), bias = keyed.input("bias", KILN_F32, {96});
  res = keyed.input("res", KILN_F32, {37, 96});
  const ValueId k12 = keyed.input("key12", KILN_I32, {5}), k13 = keyed.input("key13", KILN_I32, {5});
  keyed.output("y", keyed.add(keyed.dropout_keyed(keyed.add(h, bias), k12, 0.1f), res));
  keyed.output("attn", keyed.dropout_keyed(keyed.scale(h, 0.5f), k13, 0.1f));
  m.add(KILN_OP_DROPOUT_KEYED, "in an epilogue chain, two sites", std::move(keyed),
        {{"h", hv},
         {"bias", biasv},
         {"res", resv},
         {"key12", with_site(key(51, 52, 0), 12)},
         {"key13", with_site(key(51, 52, 0), 13)}});
  // A chain whose dropout has a period and stride (a tensor-parallel
  // shard's mask) and a large offset, with the masked value also leaving
  // the chain, and a second dropout that a fused kernel leaves to its own.
  Graph strided;
  h = strided.input("h", KILN_F32, {37, 96});
  const ValueId kp = strided.input("key", KILN_I32, {5}), kq = strided.input("key2", KILN_I32, {5});
  const ValueId masked = strided.dropout_keyed(strided.scale(h, 2.0f), kp, 0.25f, 48, 96);
  strided.output("masked", masked);
  strided.output("y", strided.dropout_keyed(strided.add(masked, h), kq, 0.5f));
  m.add(KILN_OP_DROPOUT_KEYED, "in a chain with a period, a stride and a second dropout", std::move(strided),
        {{"h", hv}, {"key", with_site(key(7, 9, (uint64_t{1} << 32) + 5), 3)}, {"key2", with_site(key(7, 9, 0), 4)}});
}

}  // namespace

void add_dropout_cases(Suite& suite) {
  CaseMaker m(suite, 4242);
  size_cases(m);
  index_cases(m);
  special_value_cases(m);
  chain_cases(m);
}

}  // namespace kiln::conformance
