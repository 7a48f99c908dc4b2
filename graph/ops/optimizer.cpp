// The optimizer step: ADAMW, which updates parameter and moments in place,
// and ADAMW_CLIP, the same on a gradient clipped in its own dtype.
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
#include "kiln/half.h"

namespace kiln::graph {

// ---------------------------------------------------------------- builders

std::vector<ValueId> Graph::adamw(ValueId p, ValueId g, ValueId m, ValueId v, ValueId hp, float beta1, float beta2,
                                  float eps, bool wd) {
  return add_node(KILN_OP_ADAMW, {p, g, m, v, hp}, {wd ? 1 : 0}, {beta1, beta2, eps});
}

std::vector<ValueId> Graph::adamw_clip(ValueId p, ValueId g, ValueId m, ValueId v, ValueId hp, ValueId clip,
                                       float beta1, float beta2, float eps, bool wd) {
  return add_node(KILN_OP_ADAMW_CLIP, {p, g, m, v, hp, clip}, {wd ? 1 : 0}, {beta1, beta2, eps});
}

namespace {

// ---------------------------------------------------------------- reference

// ADAMW's update with `grad` as the gradient: input 1, or ADAMW_CLIP's clipped copy.
void adamw_update(const ReferenceCtx& c, const std::vector<float>& grad) {
  const auto& p = c.f(0);
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

void op_adamw(const ReferenceCtx& c) { adamw_update(c, c.f(1)); }

// The f32 product rounded once to the gradient's dtype, as a bf16 tensor
// multiplied in place stores it.
void op_adamw_clip(const ReferenceCtx& c) {
  const kiln_dtype dtype = c.in(1).dtype;
  const float clip = c.f(5).at(0);
  std::vector<float> clipped = c.f(1);
  for (float& g : clipped) {
    const float product = g * clip;
    g = dtype == KILN_BF16  ? kiln_bf16_to_f32(kiln_f32_to_bf16(product))
        : dtype == KILN_F16 ? kiln_f16_to_f32(kiln_f32_to_f16(product))
                            : product;
  }
  adamw_update(c, clipped);
}

}  // namespace

void register_optimizer_ops(OpDefs& defs) {
  defs[KILN_OP_ADAMW] = {nullptr, op_adamw};
  defs[KILN_OP_ADAMW_CLIP] = {nullptr, op_adamw_clip};
}

}  // namespace kiln::graph
