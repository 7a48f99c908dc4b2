// MATMUL: kiln's generated GEMM kernel (codegen_gemm.cpp) or a CLBlast GEMM
// step (row-major, transposes as flags, batches as a strided batch), per
// shape by the KILN_OPENCL_GEMM policy (gemm_choice.h). kiln's kernel reads
// and writes 16-bit storage itself; CLBlast's SGEMM gets its 16-bit
// operands staged through f32.
#include "emit.h"

namespace kiln::ocl {

// GEMMs (CLBlast or the generated kernel).
constexpr kiln_op kMatmulOpsList[] = {
    KILN_OP_MATMUL,
};
const std::span<const kiln_op> kMatmulOps{kMatmulOpsList};

Operand emit_transpose_b(EmitContext& ctx, uint32_t node, kiln_dtype dt) {
  const ir::DecodedNode& n = ctx.g.nodes[node];
  const NodeInfo& inf = ctx.info[node];
  // b [batch, n, k] -> scratch [batch, k, n]
  const auto batch = static_cast<uint64_t>(inf.batch), nn = static_cast<uint64_t>(inf.n),
             kk = static_cast<uint64_t>(inf.k);
  const Operand bt = ctx.temp(batch * nn * kk);
  Kernel k;
  const std::string src = k.param(value(n.inputs[1]), float_pointer_type(dt, false));
  const std::string dst = k.param(bt, "float");
  const std::string I = idx(batch * nn * kk + 1);
  k.line("const " + I + " g = get_global_id(0);");
  k.line(guard("g", batch * nn * kk, ctx.target.elementwise_group));
  k.line("const " + I + " q = g / " + num(kk * nn) + ", r = g % " + num(kk * nn) + ";");
  k.line(dst + "[g] = " +
         load_float(dt, src, "q * " + num(kk * nn) + " + (r % " + num(nn) + ") * " + num(kk) + " + r / " + num(nn)) +
         ";");
  launch(ctx, k, static_cast<int32_t>(node), batch * nn * kk, ctx.target.elementwise_group);
  return bt;
}

namespace {

// The CLBlast step, written for f32 (stage_16bit widens its 16-bit values).
void emit_clblast_gemm(EmitContext& ctx, uint32_t node) {
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
    p.operands[1] = emit_transpose_b(ctx, node, KILN_F32);
    p.step.trans_b = false;
  }
  ctx.unit.steps.push_back(std::move(p));
}

bool runs_kiln_gemm(const Target& t, const NodeInfo& inf) {
  switch (t.gemm) {
    case GemmPolicy::Kiln: return true;
    case GemmPolicy::Clblast: return false;
    case GemmPolicy::Auto: return kiln_gemm_wins(inf, t.cpu_device);
  }
  return false;
}

}  // namespace

void emit_matmul(EmitContext& ctx, uint32_t node) {
  if (runs_kiln_gemm(ctx.target, ctx.info[node])) return emit_kiln_gemm(ctx, node);
  emit_clblast_gemm(ctx, node);
  stage_16bit(ctx, node);
}

}  // namespace kiln::ocl
