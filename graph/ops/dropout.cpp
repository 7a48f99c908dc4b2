// DROPOUT and DROPOUT_KEYED: inverted dropout with a counter-based mask
// (kiln/philox.h); the keyed form reads its site from the key at run time.
//
// Its Graph builders, its VJP rule and its reference evaluation, registered
// in register_dropout_ops at the bottom.
#include <cstdint>
#include <vector>

#include "graph/graph.h"
#include "graph/ops/op_def.h"
#include "graph/ops/vjp.h"
#include "graph/reference/reference_ctx.h"
#include "kiln/philox.h"

namespace kiln::graph {

// ---------------------------------------------------------------- builders

ValueId Graph::dropout(ValueId x, ValueId key, float p, int64_t site, int64_t period, int64_t stride) {
  return add_node(KILN_OP_DROPOUT, {x, key}, {site, period, stride}, {p})[0];
}
ValueId Graph::dropout(ValueId x, ValueId key, float p, int64_t site) {
  const int64_t n = numel(shape(x));
  return dropout(x, key, p, site, n, n);
}
ValueId Graph::dropout_keyed(ValueId x, ValueId key, float p, int64_t period, int64_t stride) {
  return add_node(KILN_OP_DROPOUT_KEYED, {x, key}, {period, stride}, {p})[0];
}
ValueId Graph::dropout_keyed(ValueId x, ValueId key, float p) {
  const int64_t n = numel(shape(x));
  return dropout_keyed(x, key, p, n, n);
}

namespace {

// ---------------------------------------------------------------- VJP rules

// y = x * m(key) with a mask m that does not depend on x: dx = dy * m, the
// same DROPOUT of dy. The key is an integer input and gets no gradient.
Grads vjp_dropout(Graph& g, const VjpArgs& a) {
  Grads d = none_for(a);
  const auto& ia = a.node.iattrs;
  if (a.need[0]) d[0] = g.dropout(a.dy[0], a.in(1), a.node.fattrs.at(0), ia.at(0), ia.at(1), ia.at(2));
  return d;
}
Grads vjp_dropout_keyed(Graph& g, const VjpArgs& a) {
  Grads d = none_for(a);
  const auto& ia = a.node.iattrs;
  if (a.need[0]) d[0] = g.dropout_keyed(a.dy[0], a.in(1), a.node.fattrs.at(0), ia.at(0), ia.at(1));
  return d;
}

// ---------------------------------------------------------------- reference

// The mask straight from the definition, one Philox block per element, and
// the product in double (exact for a float times a float, so rounding it to
// float gives the single fp32 multiply every kernel does).
void dropout_reference(const ReferenceCtx& c, uint32_t site, int64_t period_attr, int64_t stride_attr) {
  const auto& x = c.f(0);
  const kiln_dropout_key key = kiln_dropout_key_from(c.ids(1).data());
  const double p = c.fa(0);
  const auto period = static_cast<uint64_t>(period_attr), stride = static_cast<uint64_t>(stride_attr);
  const uint32_t threshold = kiln_dropout_threshold(p);
  const double scale = kiln_dropout_scale(p);
  HostTensor& y = c.out(0);
  for (size_t e = 0; e < x.size(); ++e) {
    const uint64_t g = kiln_dropout_index(e, period, stride, key.offset);
    const bool keep = kiln_dropout_keep(kiln_dropout_bits(key, site, g), threshold) != 0;
    y.f32[e] = static_cast<float>(static_cast<double>(x[e]) * (keep ? scale : 0.0));
  }
}

void op_dropout(const ReferenceCtx& c) {
  if (c.ids(1).size() != 4) c.fail("key must hold 4 words");
  dropout_reference(c, static_cast<uint32_t>(c.ia(0)), c.ia(1), c.ia(2));
}

// The site is the key's word 4, a uint32 bit pattern in an i32 slot.
void op_dropout_keyed(const ReferenceCtx& c) {
  const auto& words = c.ids(1);
  if (words.size() != 5) c.fail("key must hold 5 words");
  dropout_reference(c, static_cast<uint32_t>(words[4]), c.ia(0), c.ia(1));
}

}  // namespace

void register_dropout_ops(OpDefs& defs) {
  defs[KILN_OP_DROPOUT] = {vjp_dropout, op_dropout};
  defs[KILN_OP_DROPOUT_KEYED] = {vjp_dropout_keyed, op_dropout_keyed};
}

}  // namespace kiln::graph
