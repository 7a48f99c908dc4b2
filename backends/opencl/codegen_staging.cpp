// bf16/f16 for the generators written for f32 (GEMM, the row ops, the
// reductions, RoPE, ALiBi, the embedding gradient): the widen-compute-round
// path. Every 16-bit value a node reads is widened into an f32 temporary in
// the arena, the node's f32 steps run on the temporaries, and every 16-bit
// output is rounded to nearest even once from its temporary: f32
// arithmetic and one rounding at the store, as the reference defines it.
// The temporaries live for the one unit, so they cost arena space of the
// largest such node only. Elementwise chains, CAST and the layout ops read
// and write 16-bit memory directly instead (codegen_elementwise.cpp,
// codegen_layout.cpp).
#include <map>

#include "emit.h"

namespace kiln::ocl {
namespace {

// dst[g] = src[g] for g < count, converting through `load` and `store`.
void convert(EmitContext& ctx, int32_t node, const Operand& src, kiln_dtype src_dt, const Operand& dst,
             kiln_dtype dst_dt, uint64_t count) {
  Kernel k;
  const std::string s = k.param(src, float_pointer_type(src_dt, false));
  const std::string d = k.param(dst, float_pointer_type(dst_dt, true));
  const std::string I = idx(count + 1);
  k.line("const " + I + " g = get_global_id(0);");
  k.line(guard("g", count, ctx.target.elementwise_group));
  k.line(store_float(dst_dt, d, "g", load_float(src_dt, s, "g")));
  launch(ctx, k, node, count, ctx.target.elementwise_group);
}

}  // namespace

void stage_16bit(EmitContext& ctx, uint32_t node) {
  const ir::DecodedNode& n = ctx.g.nodes[node];
  const auto nd = static_cast<int32_t>(node);
  std::map<uint32_t, Operand> staged;  // 16-bit value -> its f32 temporary
  std::vector<uint32_t> reads, writes;
  for (uint32_t v : n.inputs)
    if (is_16bit(ctx.val(v).dtype) && staged.count(v) == 0) {
      staged.emplace(v, ctx.temp(static_cast<uint64_t>(ctx.val(v).numel())));
      reads.push_back(v);
    }
  for (uint32_t v : n.outputs)
    if (is_16bit(ctx.val(v).dtype)) {
      staged.emplace(v, ctx.temp(static_cast<uint64_t>(ctx.val(v).numel())));
      writes.push_back(v);
    }
  if (staged.empty()) return;

  std::vector<PendingStep> body = std::move(ctx.unit.steps);
  ctx.unit.steps.clear();
  for (uint32_t v : reads)
    convert(ctx, nd, value(v), ctx.val(v).dtype, staged.at(v), KILN_F32, static_cast<uint64_t>(ctx.val(v).numel()));
  for (PendingStep& p : body) {
    for (Operand& op : p.operands) {
      if (op.kind != Operand::Kind::Value || staged.count(op.id) == 0) continue;
      const uint64_t extra = op.extra;
      op = staged.at(op.id);
      op.extra = extra;
    }
    ctx.unit.steps.push_back(std::move(p));
  }
  for (uint32_t v : writes)
    convert(ctx, nd, staged.at(v), KILN_F32, value(v), ctx.val(v).dtype, static_cast<uint64_t>(ctx.val(v).numel()));
}

}  // namespace kiln::ocl
