// MATMUL is no generated kernel: it becomes a CLBlast GEMM step (row-major,
// transposes as flags, batches as a strided batch).
#include "emit.h"

namespace kiln::ocl {

// GEMMs (CLBlast or the generated kernel).
constexpr kiln_op kMatmulOpsList[] = {
    KILN_OP_MATMUL,
};
const std::span<const kiln_op> kMatmulOps{kMatmulOpsList};

void emit_matmul(EmitContext& ctx, uint32_t node) {
  const ir::DecodedNode& n = ctx.g.nodes[node];
  const NodeInfo& inf = ctx.info[node];
  PendingStep p;
  p.step.kind = StepKind::Gemm;
  p.step.node = static_cast<int32_t>(node);
  p.step.trans_a = inf.trans_a;
  p.step.trans_b = inf.trans_b;
  p.step.batch = static_cast<uint64_t>(inf.batch);
  p.step.m = static_cast<uint64_t>(inf.m);
  p.step.n = static_cast<uint64_t>(inf.n);
  p.step.k = static_cast<uint64_t>(inf.k);
  p.step.beta = 0.0f;
  p.operands = {value(n.inputs[0]), value(n.inputs[1]), value(n.outputs[0])};
  if (inf.batch > 1 && inf.trans_b && ctx.target.pretranspose_batched_b) {
    // b [batch, n, k] -> scratch [batch, k, n]
    const auto batch = static_cast<uint64_t>(inf.batch), nn = static_cast<uint64_t>(inf.n),
               kk = static_cast<uint64_t>(inf.k);
    const Operand bt = ctx.temp(batch * nn * kk);
    Kernel k;
    const std::string src = k.param(value(n.inputs[1]), "const float");
    const std::string dst = k.param(bt, "float");
    const std::string I = idx(batch * nn * kk + 1);
    k.line("const " + I + " g = get_global_id(0);");
    k.line(guard("g", batch * nn * kk, ctx.target.elementwise_group));
    k.line("const " + I + " q = g / " + num(kk * nn) + ", r = g % " + num(kk * nn) + ";");
    k.line(dst + "[g] = " + src + "[q * " + num(kk * nn) + " + (r % " + num(nn) + ") * " + num(kk) + " + r / " +
           num(nn) + "];");
    launch(ctx, k, static_cast<int32_t>(node), batch * nn * kk, ctx.target.elementwise_group);
    p.step.trans_b = false;
    p.operands[1] = bt;
  }
  ctx.unit.steps.push_back(std::move(p));
}

}  // namespace kiln::ocl
