// Data movement: PERMUTE (index arithmetic with the collapsed dims as
// literals), SPLIT and CONCAT (one strided copy per part, sharing one
// kernel), RESHAPE between distinct buffers, and the EMBEDDING gather.
// Moves are dtype-agnostic: elements copied as uint (4-byte dtypes) or
// ushort (bf16, f16), bits unchanged, as the reference moves them.
#include "emit.h"

namespace kiln::ocl {
namespace {

// The unsigned type a kernel moves elements of `dt` as.
std::string word(kiln_dtype dt) { return kiln_dtype_size(dt) == 2 ? "ushort" : "uint"; }

// dst[0..count) = src[0..count) of dtype `dt`. A Copy step addresses 4-byte
// words, so 2-byte elements (which may start mid-word) move in a kernel.
void move(EmitContext& ctx, int32_t node, const Operand& src, const Operand& dst, uint64_t count, kiln_dtype dt) {
  if (kiln_dtype_size(dt) == 4) return emit_copy(ctx, node, src, dst, count * 4);
  Kernel k;
  const std::string s = k.param(src, "const " + word(dt));
  const std::string d = k.param(dst, word(dt));
  const std::string I = idx(count + 1);
  k.line("const " + I + " g = get_global_id(0);");
  k.line(guard("g", count, ctx.target.elementwise_group));
  k.line(d + "[g] = " + s + "[g];");
  launch(ctx, k, node, count, ctx.target.elementwise_group);
}

// dst[q * dst_stride + j] = src[q * src_stride + j] for q < rows, j < width.
void strided_copy(EmitContext& ctx, int32_t node, const Operand& src, const Operand& dst, uint64_t rows, uint64_t width,
                  uint64_t src_stride, uint64_t dst_stride, kiln_dtype dt) {
  if (rows == 1 || (width == src_stride && width == dst_stride)) return move(ctx, node, src, dst, rows * width, dt);
  Kernel k;
  const std::string s = k.param(src, "const " + word(dt));
  const std::string d = k.param(dst, word(dt));
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
  const kiln_dtype dt = ctx.val(n.inputs[0]).dtype;
  // Rank <= 1 after collapsing: the layout does not change.
  if (p.rank <= 1) return move(ctx, static_cast<int32_t>(node), value(n.inputs[0]), value(n.outputs[0]), count, dt);
  Kernel k;
  const std::string x = k.param(value(n.inputs[0]), "const " + word(dt));
  const std::string y = k.param(value(n.outputs[0]), word(dt));
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
  // 16-bit rows are gathered as they are; a bad id writes the dtype's NaN.
  const kiln_dtype dt = ctx.val(n.inputs[0]).dtype;
  const std::string nan = dt == KILN_BF16 ? "0x7FC0u" : dt == KILN_F16 ? "0x7E00u" : "NAN";
  Kernel k;
  const std::string table = k.param(value(n.inputs[0]), is_16bit(dt) ? "const ushort" : "const float");
  const std::string ids = k.param(value(n.inputs[1]), "const int");
  const std::string y = k.param(value(n.outputs[0]), is_16bit(dt) ? "ushort" : "float");
  const std::string flag = k.flag_param(ctx.check(
      "node " + std::to_string(node) + " (embedding): an id is out of range [0, " + std::to_string(vocab) + ")"));
  const std::string I = idx(std::max(rows, vocab) * cols + 1);
  k.line("const " + I + " g = get_global_id(0);");
  k.line(guard("g", rows * cols, ctx.target.elementwise_group));
  k.line("const " + I + " i = g / " + num(cols) + ", c = g % " + num(cols) + ";");
  k.line("const int id = " + ids + "[i];");
  k.line("if (id < 0 || id >= " + std::to_string(vocab) + ") { " + flag + "; " + y + "[g] = " + nan + "; return; }");
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
  const kiln_dtype dt = n.inputs.empty() ? KILN_F32 : ctx.val(n.inputs[0]).dtype;
  switch (n.op) {
    case KILN_OP_PERMUTE: return permute(ctx, node);
    case KILN_OP_EMBEDDING: return embedding(ctx, node);
    case KILN_OP_RESHAPE: {
      const ir::DecodedValue& in = ctx.g.values[n.inputs[0]];
      const ir::DecodedValue& out = ctx.g.values[n.outputs[0]];
      if (in.slot == out.slot && in.offset == out.offset && in.slot != 0) return;  // already in place
      return move(ctx, nd, value(n.inputs[0]), value(n.outputs[0]), static_cast<uint64_t>(inf.count), dt);
    }
    case KILN_OP_SPLIT: {
      const auto rows = static_cast<uint64_t>(inf.rows), inner = static_cast<uint64_t>(inf.inner);
      const auto parts = static_cast<uint64_t>(inf.parts);
      for (uint64_t p = 0; p < parts; ++p)
        strided_copy(ctx, nd, value(n.inputs[0], p * inner), value(n.outputs[p]), rows, inner, parts * inner, inner,
                     dt);
      return;
    }
    case KILN_OP_CONCAT: {
      const auto rows = static_cast<uint64_t>(inf.rows), inner = static_cast<uint64_t>(inf.inner);
      uint64_t at = 0;
      for (size_t i = 0; i < n.inputs.size(); ++i) {
        const auto width = static_cast<uint64_t>(inf.inners[i]);
        strided_copy(ctx, nd, value(n.inputs[i]), value(n.outputs[0], at), rows, width, width, inner, dt);
        at += width;
      }
      return;
    }
    default: fail(KILN_ERR_INTERNAL, std::string("no lowering for ") + op_name(n.op));
  }
}

}  // namespace kiln::ocl
