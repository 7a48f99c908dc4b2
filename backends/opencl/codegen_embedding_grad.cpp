// EMBEDDING_GRAD without float atomics: a counting sort of positions by id
// (integer atomics only count and claim slots), each bucket then sorted by
// position, and one work item per (vocab row, column) sums its bucket in
// position order: the reference's order, the same every run. Work is
// O(ids * C + V * C) however skewed the ids are, apart from the bucket sort,
// which is quadratic only in the size of one bucket.
#include "emit.h"

namespace kiln::ocl {

// The deterministic scatter-add.
constexpr kiln_op kEmbeddingGradOpsList[] = {
    KILN_OP_EMBEDDING_GRAD,
};
const std::span<const kiln_op> kEmbeddingGradOps{kEmbeddingGradOpsList};

void emit_embedding_grad(EmitContext& ctx, uint32_t node) {
  const ir::DecodedNode& n = ctx.g.nodes[node];
  const NodeInfo& inf = ctx.info[node];
  const auto nd = static_cast<int32_t>(node);
  const auto rows = static_cast<uint64_t>(inf.rows), cols = static_cast<uint64_t>(inf.cols);
  const auto vocab = static_cast<uint64_t>(inf.vocab);
  const std::string V = std::to_string(vocab);
  const Operand count = ctx.temp(vocab), start = ctx.temp(vocab), cursor = ctx.temp(vocab);
  const Operand pos = ctx.temp(rows);
  const Operand check =
      ctx.check("node " + std::to_string(node) + " (embedding_grad): an id is out of range [0, " + V + ")");
  const uint64_t group = std::min<uint64_t>(64, ctx.target.max_work_group);
  {
    Kernel k;  // clear the counts
    const std::string c = k.param(count, "int");
    k.line("const uint v = get_global_id(0);");
    k.line("if (v < " + num(vocab) + ") " + c + "[v] = 0;");
    launch(ctx, k, nd, vocab, group);
  }
  {
    Kernel k;  // count each id
    const std::string ids = k.param(value(n.inputs[1]), "const int");
    const std::string c = k.param(count, "int");
    const std::string flag = k.flag_param(check);
    k.line("const uint i = get_global_id(0);");
    k.line("if (i >= " + num(rows) + ") return;");
    k.line("const int id = " + ids + "[i];");
    k.line("if (id < 0 || id >= " + V + ") " + flag + "; else atomic_inc(" + c + " + id);");
    launch(ctx, k, nd, rows, group);
  }
  {
    Kernel k;  // bucket starts: an exclusive prefix sum, serial
    const std::string c = k.param(count, "const int");
    const std::string s = k.param(start, "int");
    const std::string cur = k.param(cursor, "int");
    k.line("int run = 0;");
    k.line("for (uint v = 0; v < " + num(vocab) + "; ++v) { " + s + "[v] = run; " + cur + "[v] = run; run += " + c +
           "[v]; }");
    launch(ctx, k, nd, 1, 1);
  }
  {
    Kernel k;  // scatter positions into their buckets (in any order)
    const std::string ids = k.param(value(n.inputs[1]), "const int");
    const std::string cur = k.param(cursor, "int");
    const std::string p = k.param(pos, "int");
    k.line("const uint i = get_global_id(0);");
    k.line("if (i >= " + num(rows) + ") return;");
    k.line("const int id = " + ids + "[i];");
    k.line("if (id >= 0 && id < " + V + ") " + p + "[atomic_inc(" + cur + " + id)] = (int)i;");
    launch(ctx, k, nd, rows, group);
  }
  {
    Kernel k;  // sort each bucket by position: the order becomes fixed
    const std::string c = k.param(count, "const int");
    const std::string s = k.param(start, "const int");
    const std::string p = k.param(pos, "int");
    k.line("const uint v = get_global_id(0);");
    k.line("if (v >= " + num(vocab) + ") return;");
    k.line("__global int* b = " + p + " + " + s + "[v];");
    k.line("const int m = " + c + "[v];");
    k.line("for (int a = 1; a < m; ++a) {");
    k.line("  const int key = b[a];");
    k.line("  int z = a - 1;");
    k.line("  while (z >= 0 && b[z] > key) { b[z + 1] = b[z]; --z; }");
    k.line("  b[z + 1] = key;");
    k.line("}");
    launch(ctx, k, nd, vocab, group);
  }
  {
    Kernel k;  // sum each bucket's rows, column by column
    const std::string dy = k.param(value(n.inputs[0]), "const float");
    const std::string c = k.param(count, "const int");
    const std::string s = k.param(start, "const int");
    const std::string p = k.param(pos, "const int");
    const std::string out = k.param(value(n.outputs[0]), "float");
    const std::string I = idx(std::max(vocab, rows) * cols + 1);
    k.line("const " + I + " g = get_global_id(0);");
    k.line(guard("g", vocab * cols, ctx.target.elementwise_group));
    k.line("const " + I + " v = g / " + num(cols) + ", col = g % " + num(cols) + ";");
    k.line("const int first = " + s + "[v], end = first + " + c + "[v];");
    k.line(kahan_declare("acc"));
    k.line("for (int q = first; q < end; ++q) " +
           kahan_add("acc", dy + "[(" + I + ")" + p + "[q] * " + num(cols) + " + col]"));
    k.line(out + "[g] = acc;");
    launch(ctx, k, nd, vocab * cols, ctx.target.elementwise_group);
  }
}

}  // namespace kiln::ocl
