// Data movement: PERMUTE (index arithmetic with the collapsed dims as
// literals), SPLIT and CONCAT (one strided copy per part, sharing one
// kernel), RESHAPE between distinct buffers, and the EMBEDDING gather.
// Moves are dtype-agnostic: 4-byte words copied as uint.
#include "emit.h"

namespace kiln::ocl {
namespace {

// dst[q * dst_stride + j] = src[q * src_stride + j] for q < rows, j < width.
void strided_copy(EmitContext& ctx, int32_t node, const Operand& src, const Operand& dst, uint64_t rows, uint64_t width,
                  uint64_t src_stride, uint64_t dst_stride) {
  if (rows == 1 || (width == src_stride && width == dst_stride))
    return emit_copy(ctx, node, src, dst, rows * width * 4);
  Kernel k;
  const std::string s = k.param(src, "const uint");
  const std::string d = k.param(dst, "uint");
  const std::string I = idx(rows * std::max(src_stride, dst_stride) + 1);
  k.line("const " + I + " g = get_global_id(0);");
  k.line(guard("g", rows * width, ctx.target.elementwise_group));
  k.line("const " + I + " q = g / " + num(width) + ", j = g % " + num(width) + ";");
  k.line(d + "[q * " + num(dst_stride) + " + j] = " + s + "[q * " + num(src_stride) + " + j];");
  launch(ctx, k, node, rows * width, ctx.target.elementwise_group);
}

void permute(EmitContext& ctx, uint32_t node) {
  const ir::DecodedNode& n = ctx.g.nodes[node];
  const NodeInfo& inf = ctx.info[node];
  const PermutePlan& p = inf.permute;
  const auto count = static_cast<uint64_t>(inf.count);
  // Rank <= 1 after collapsing: the layout does not change.
  if (p.rank <= 1)
    return emit_copy(ctx, static_cast<int32_t>(node), value(n.inputs[0]), value(n.outputs[0]), count * 4);
  Kernel k;
  const std::string x = k.param(value(n.inputs[0]), "const uint");
  const std::string y = k.param(value(n.outputs[0]), "uint");
  const std::string I = idx(count + 1);
  k.line("const " + I + " g = get_global_id(0);");
  k.line(guard("g", count, ctx.target.elementwise_group));
  k.line(I + " rest = g, at = 0;");
  for (int d = p.rank - 1; d >= 0; --d) {
    const auto dim = static_cast<uint64_t>(p.out_dims[d]), stride = static_cast<uint64_t>(p.in_strides[d]);
    if (d == 0) {
      k.line("at += rest * " + num(stride) + ";");
    } else {
      k.line("at += (rest % " + num(dim) + ") * " + num(stride) + ";");
      k.line("rest /= " + num(dim) + ";");
    }
  }
  k.line(y + "[g] = " + x + "[at];");
  launch(ctx, k, static_cast<int32_t>(node), count, ctx.target.elementwise_group);
}

void embedding(EmitContext& ctx, uint32_t node) {
  const ir::DecodedNode& n = ctx.g.nodes[node];
  const NodeInfo& inf = ctx.info[node];
  const auto rows = static_cast<uint64_t>(inf.rows), cols = static_cast<uint64_t>(inf.cols);
  const auto vocab = static_cast<uint64_t>(inf.vocab);
  Kernel k;
  const std::string table = k.param(value(n.inputs[0]), "const float");
  const std::string ids = k.param(value(n.inputs[1]), "const int");
  const std::string y = k.param(value(n.outputs[0]), "float");
  const std::string flag = k.flag_param(ctx.check(
      "node " + std::to_string(node) + " (embedding): an id is out of range [0, " + std::to_string(vocab) + ")"));
  const std::string I = idx(std::max(rows, vocab) * cols + 1);
  k.line("const " + I + " g = get_global_id(0);");
  k.line(guard("g", rows * cols, ctx.target.elementwise_group));
  k.line("const " + I + " i = g / " + num(cols) + ", c = g % " + num(cols) + ";");
  k.line("const int id = " + ids + "[i];");
  k.line("if (id < 0 || id >= " + std::to_string(vocab) + ") { " + flag + "; " + y + "[g] = NAN; return; }");
  k.line(y + "[g] = " + table + "[(" + I + ")id * " + num(cols) + " + c];");
  launch(ctx, k, static_cast<int32_t>(node), rows * cols, ctx.target.elementwise_group);
}

}  // namespace

// Data movement (and the embedding gather).
constexpr kiln_op kLayoutOpsList[] = {
    KILN_OP_RESHAPE, KILN_OP_PERMUTE, KILN_OP_SPLIT, KILN_OP_CONCAT, KILN_OP_EMBEDDING,
};
const std::span<const kiln_op> kLayoutOps{kLayoutOpsList};

void emit_layout(EmitContext& ctx, uint32_t node) {
  const ir::DecodedNode& n = ctx.g.nodes[node];
  const NodeInfo& inf = ctx.info[node];
  const auto nd = static_cast<int32_t>(node);
  switch (n.op) {
    case KILN_OP_PERMUTE: return permute(ctx, node);
    case KILN_OP_EMBEDDING: return embedding(ctx, node);
    case KILN_OP_RESHAPE: {
      const ir::DecodedValue& in = ctx.g.values[n.inputs[0]];
      const ir::DecodedValue& out = ctx.g.values[n.outputs[0]];
      if (in.slot == out.slot && in.offset == out.offset && in.slot != 0) return;  // already in place
      return emit_copy(ctx, nd, value(n.inputs[0]), value(n.outputs[0]), static_cast<uint64_t>(inf.count) * 4);
    }
    case KILN_OP_SPLIT: {
      const auto rows = static_cast<uint64_t>(inf.rows), inner = static_cast<uint64_t>(inf.inner);
      const auto parts = static_cast<uint64_t>(inf.parts);
      for (uint64_t p = 0; p < parts; ++p)
        strided_copy(ctx, nd, value(n.inputs[0], p * inner), value(n.outputs[p]), rows, inner, parts * inner, inner);
      return;
    }
    case KILN_OP_CONCAT: {
      const auto rows = static_cast<uint64_t>(inf.rows), inner = static_cast<uint64_t>(inf.inner);
      uint64_t at = 0;
      for (size_t i = 0; i < n.inputs.size(); ++i) {
        const auto width = static_cast<uint64_t>(inf.inners[i]);
        strided_copy(ctx, nd, value(n.inputs[i]), value(n.outputs[0], at), rows, width, width, inner);
        at += width;
      }
      return;
    }
    default: fail(KILN_ERR_INTERNAL, std::string("no lowering for ") + op_name(n.op));
  }
}

}  // namespace kiln::ocl
