// Reductions over many rows: SUM_TO, SUM_SQUARES, and the column sums of
// LAYERNORM_GRAD. No float atomics: rows are summed in fixed chunks by one
// work item each, then the chunk sums in order, so every run adds the same
// numbers in the same order. Sums are compensated, which keeps long sums
// (tens of thousands of rows) within the conformance tolerance.
#include "emit.h"

namespace kiln::ocl {
namespace {

constexpr uint64_t kRowsPerChunk = 64;
constexpr uint64_t kElementsPerChunk = 2048;

}  // namespace

std::string kahan_declare(const std::string& s) { return "float " + s + " = 0.0f, " + s + "c = 0.0f;"; }

std::string kahan_add(const std::string& s, const std::string& expr) {
  return "{ const float ky = (" + expr + ") - " + s + "c; const float kt = " + s + " + ky; " + s +
         "c = isfinite(kt) ? (kt - " + s + ") - ky : 0.0f; " + s + " = kt; }";
}

void emit_copy(EmitContext& ctx, int32_t node, const Operand& src, const Operand& dst, uint64_t bytes) {
  PendingStep p;
  p.step.kind = StepKind::Copy;
  p.step.node = node;
  p.step.bytes = bytes;
  p.operands = {src, dst};
  ctx.unit.steps.push_back(std::move(p));
}

void emit_serial_sum(EmitContext& ctx, int32_t node, const Operand& src, uint64_t count, bool square,
                     const Operand& dst, uint64_t divisor) {
  Kernel k;
  const std::string x = k.param(src, "const float");
  const std::string y = k.param(dst, "float");
  k.line(kahan_declare("s"));
  k.line("for (" + idx(count) + " j = 0; j < " + num(count) + "; ++j) " +
         kahan_add("s", square ? x + "[j] * " + x + "[j]" : x + "[j]"));
  k.line(y + "[0] = s" + (divisor == 1 ? std::string() : " / " + flt(static_cast<float>(divisor))) + ";");
  launch(ctx, k, node, 1, 1);
}

void emit_column_sums(EmitContext& ctx, int32_t node, int64_t rows_, int64_t cols_,
                      const std::vector<std::pair<Operand, std::string>>& inputs, const std::vector<std::string>& exprs,
                      const std::vector<Operand>& outputs) {
  const auto rows = static_cast<uint64_t>(rows_), cols = static_cast<uint64_t>(cols_);
  const uint64_t chunks = (rows + kRowsPerChunk - 1) / kRowsPerChunk;
  const std::string I = idx(rows * cols + 1);
  auto bind_inputs = [&](Kernel& k) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      const std::string p = k.param(inputs[i].first, inputs[i].second);
      k.line("__global " + inputs[i].second + "* p" + std::to_string(i) + " = " + p + ";");
    }
  };
  auto sum_rows = [&](Kernel& k, const std::string& first, const std::string& end) {
    for (size_t e = 0; e < exprs.size(); ++e) k.line(kahan_declare("s" + std::to_string(e)));
    k.line("for (" + I + " r = " + first + "; r < " + end + "; ++r) {");
    for (size_t e = 0; e < exprs.size(); ++e) k.line("  " + kahan_add("s" + std::to_string(e), exprs[e]));
    k.line("}");
  };
  if (chunks <= 1) {
    Kernel k;
    bind_inputs(k);
    std::vector<std::string> outs;
    for (const Operand& o : outputs) outs.push_back(k.param(o, "float"));
    k.line("const " + I + " c = get_global_id(0);");
    k.line("if (c >= " + num(cols) + ") return;");
    sum_rows(k, "0", num(rows));
    for (size_t e = 0; e < outs.size(); ++e) k.line(outs[e] + "[c] = s" + std::to_string(e) + ";");
    launch(ctx, k, node, cols, std::min<uint64_t>(64, ctx.target.max_work_group));
    return;
  }
  // Stage 1: work item (chunk, column) sums its chunk of rows.
  const Operand partial = ctx.temp(chunks * cols * exprs.size());
  {
    Kernel k;
    bind_inputs(k);
    const std::string part = k.param(partial, "float");
    k.line("const " + I + " g = get_global_id(0);");
    k.line("if (g >= " + num(chunks * cols) + ") return;");
    k.line("const " + I + " q = g / " + num(cols) + ", c = g % " + num(cols) + ";");
    k.line("const " + I + " end = min((" + I + ")((q + 1) * " + num(kRowsPerChunk) + "), (" + I + ")" + num(rows) +
           ");");
    sum_rows(k, "q * " + num(kRowsPerChunk), "end");
    for (size_t e = 0; e < exprs.size(); ++e)
      k.line(part + "[" + num(e * chunks * cols) + " + g] = s" + std::to_string(e) + ";");
    launch(ctx, k, node, chunks * cols, std::min<uint64_t>(64, ctx.target.max_work_group));
  }
  // Stage 2: work item (column) sums the chunks in order.
  {
    Kernel k;
    const std::string part = k.param(partial, "const float");
    std::vector<std::string> outs;
    for (const Operand& o : outputs) outs.push_back(k.param(o, "float"));
    k.line("const " + I + " c = get_global_id(0);");
    k.line("if (c >= " + num(cols) + ") return;");
    for (size_t e = 0; e < exprs.size(); ++e) {
      const std::string s = "s" + std::to_string(e);
      k.line(kahan_declare(s));
      k.line("for (" + I + " q = 0; q < " + num(chunks) + "; ++q) " +
             kahan_add(s, part + "[" + num(e * chunks * cols) + " + q * " + num(cols) + " + c]"));
      k.line(outs[e] + "[c] = " + s + ";");
    }
    launch(ctx, k, node, cols, std::min<uint64_t>(64, ctx.target.max_work_group));
  }
}

// Reductions over many rows.
constexpr kiln_op kReduceOpsList[] = {
    KILN_OP_SUM_TO,
    KILN_OP_SUM_SQUARES,
};
const std::span<const kiln_op> kReduceOps{kReduceOpsList};

void emit_reduce(EmitContext& ctx, uint32_t node) {
  const ir::DecodedNode& n = ctx.g.nodes[node];
  const NodeInfo& inf = ctx.info[node];
  const auto nd = static_cast<int32_t>(node);
  if (n.op == KILN_OP_SUM_TO) {
    if (inf.rows == 1)
      return emit_copy(ctx, nd, value(n.inputs[0]), value(n.outputs[0]), static_cast<uint64_t>(inf.cols) * 4);
    emit_column_sums(ctx, nd, inf.rows, inf.cols, {{value(n.inputs[0]), "const float"}},
                     {"p0[r * " + num(static_cast<uint64_t>(inf.cols)) + " + c]"}, {value(n.outputs[0])});
    return;
  }
  // SUM_SQUARES: chunk sums, then their sum.
  const auto count = static_cast<uint64_t>(inf.count);
  const uint64_t chunks = (count + kElementsPerChunk - 1) / kElementsPerChunk;
  if (chunks <= 1) return emit_serial_sum(ctx, nd, value(n.inputs[0]), count, true, value(n.outputs[0]), 1);
  const Operand partial = ctx.temp(chunks);
  Kernel k;
  const std::string x = k.param(value(n.inputs[0]), "const float");
  const std::string part = k.param(partial, "float");
  const std::string I = idx(count + kElementsPerChunk);
  k.line("const " + I + " q = get_global_id(0);");
  k.line("if (q >= " + num(chunks) + ") return;");
  k.line("const " + I + " end = min((" + I + ")((q + 1) * " + num(kElementsPerChunk) + "), (" + I + ")" + num(count) +
         ");");
  k.line(kahan_declare("s"));
  k.line("for (" + I + " j = q * " + num(kElementsPerChunk) + "; j < end; ++j) " +
         kahan_add("s", x + "[j] * " + x + "[j]"));
  k.line(part + "[q] = s;");
  launch(ctx, k, nd, chunks, std::min<uint64_t>(64, ctx.target.max_work_group));
  emit_serial_sum(ctx, nd, partial, chunks, false, value(n.outputs[0]), 1);
}

}  // namespace kiln::ocl
