// ALIBI: y[..., h, i, j] = x[..., h, i, j] + slopes[h] * (j - i), one work
// item per element. Not part of elementwise fusion (its row in kiln/ops.h
// says why), so it is a kernel of its own. The program's
// `#pragma OPENCL FP_CONTRACT OFF` keeps the product rounded to f32 before
// the add, as the op defines and the other backends compute.
#include "emit.h"

namespace kiln::ocl {
namespace {

void alibi(EmitContext& ctx, uint32_t node) {
  const ir::DecodedNode& n = ctx.g.nodes[node];
  const NodeInfo& inf = ctx.info[node];
  const auto count = static_cast<uint64_t>(inf.count), t = static_cast<uint64_t>(inf.cols);
  const auto heads = static_cast<uint64_t>(inf.heads);
  Kernel k;
  const std::string x = k.param(value(n.inputs[0]), "const float");
  const std::string slopes = k.param(value(n.inputs[1]), "const float");
  const std::string y = k.param(value(n.outputs[0]), "float");
  const std::string I = idx(count + 1);
  k.line("const " + I + " g = get_global_id(0);");
  k.line(guard("g", count, ctx.target.elementwise_group));
  k.line("const " + I + " j = g % " + num(t) + ", i = g / " + num(t) + " % " + num(t) + ";");
  k.line("const float bias = " + slopes + "[g / " + num(t * t) + " % " + num(heads) +
         "] * (float)((long)j - (long)i);");
  k.line(y + "[g] = " + x + "[g] + bias;");
  launch(ctx, k, static_cast<int32_t>(node), count, ctx.target.elementwise_group);
}

}  // namespace

constexpr kiln_op kAlibiOpsList[] = {KILN_OP_ALIBI};
const std::span<const kiln_op> kAlibiOps{kAlibiOpsList};

void emit_alibi(EmitContext& ctx, uint32_t node) {
  if (ctx.g.nodes[node].op != KILN_OP_ALIBI) fail(KILN_ERR_INTERNAL, "emit_alibi: not alibi");
  alibi(ctx, node);
}

}  // namespace kiln::ocl
