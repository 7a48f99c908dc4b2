// The optimizer step: ADAMW, which updates parameter and moments in place.
//
// For each op: its Graph builder, its VJP rule (none for ops that are
// themselves gradients or have no inputs to differentiate) and its
// reference evaluation, registered in register_optimizer_ops at the bottom.
#include <cmath>
#include <cstdint>
#include <vector>

#include "graph/graph.h"
#include "graph/ops/op_def.h"
#include "graph/reference/reference_ctx.h"

namespace kiln::graph {

// ---------------------------------------------------------------- builders

std::vector<ValueId> Graph::adamw(ValueId p, ValueId g, ValueId m, ValueId v, ValueId hp, float beta1, float beta2,
                                  float eps, bool wd) {
  return add_node(KILN_OP_ADAMW, {p, g, m, v, hp}, {wd ? 1 : 0}, {beta1, beta2, eps});
}

namespace {

// ---------------------------------------------------------------- reference

void op_adamw(const ReferenceCtx& c) {
  const auto& p = c.f(0);
  const auto& grad = c.f(1);
  const auto& m = c.f(2);
  const auto& v = c.f(3);
  const auto& hp = c.f(4);
  double lr = hp.at(0), wd = hp.at(1), c1 = hp.at(2), c2 = hp.at(3), gscale = hp.at(4);
  double beta1 = c.fa(0), beta2 = c.fa(1), eps = c.fa(2);
  bool apply_wd = c.ia(0) != 0;
  HostTensor& p2 = c.out(0);
  HostTensor& m2 = c.out(1);
  HostTensor& v2 = c.out(2);
  for (size_t k = 0; k < p.size(); ++k) {
    double g = static_cast<double>(grad[k]) * gscale;
    double mk = beta1 * m[k] + (1.0 - beta1) * g;
    double vk = beta2 * v[k] + (1.0 - beta2) * g * g;
    double update = mk * c1 / (std::sqrt(vk * c2) + eps);
    if (apply_wd) update += wd * p[k];
    p2.f32[k] = static_cast<float>(p[k] - lr * update);
    m2.f32[k] = static_cast<float>(mk);
    v2.f32[k] = static_cast<float>(vk);
  }
}

}  // namespace

void register_optimizer_ops(OpDefs& defs) { defs[KILN_OP_ADAMW] = {nullptr, op_adamw}; }

}  // namespace kiln::graph
