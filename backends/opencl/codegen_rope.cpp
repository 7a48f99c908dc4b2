// ROPE and ROPE_GRAD: one work item per element of x [rows, D]. Element j
// of a rotated pair reads its partner (x[j +- R], or x[j ^ 1] interleaved)
// and the cos/sin entry of its row's position; the features past 2R are
// copied. Sizes are literals, so the index arithmetic folds.
#include "emit.h"

namespace kiln::ocl {

// Rotary position embedding.
constexpr kiln_op kRopeOpsList[] = {KILN_OP_ROPE, KILN_OP_ROPE_GRAD};
const std::span<const kiln_op> kRopeOps{kRopeOpsList};

void emit_rope(EmitContext& ctx, uint32_t node) {
  const ir::DecodedNode& n = ctx.g.nodes[node];
  const NodeInfo& inf = ctx.info[node];
  const auto rows = static_cast<uint64_t>(inf.rows), cols = static_cast<uint64_t>(inf.cols);
  const auto positions = static_cast<uint64_t>(inf.positions), pairs = static_cast<uint64_t>(inf.pairs);
  const uint64_t count = rows * cols;
  // The inverse rotation (the gradient) negates the angle: sin's sign flips.
  const bool grad = n.op == KILN_OP_ROPE_GRAD;
  Kernel k;
  const std::string x = k.param(value(n.inputs[0]), "const float");
  const std::string cos = k.param(value(n.inputs[1]), "const float");
  const std::string sin = k.param(value(n.inputs[2]), "const float");
  const std::string y = k.param(value(n.outputs[0]), "float");
  const std::string I = idx(count + 1);
  const std::string R = num(pairs);
  k.line("const " + I + " g = get_global_id(0);");
  k.line(guard("g", count, ctx.target.elementwise_group));
  k.line("const " + I + " r = g / " + num(cols) + ", j = g % " + num(cols) + ";");
  k.line("if (j >= 2u * " + R + ") { " + y + "[g] = " + x + "[g]; return; }");
  if (inf.interleaved) {
    // Pair i is (x[2i], x[2i + 1]).
    k.line("const bool first = (j & 1u) == 0u;");
    k.line("const " + I + " i = j / 2u, partner = first ? g + 1u : g - 1u;");
  } else {
    // Pair i is (x[i], x[i + R]).
    k.line("const bool first = j < " + R + ";");
    k.line("const " + I + " i = first ? j : j - " + R + ", partner = first ? g + " + R + " : g - " + R + ";");
  }
  k.line("const " + I + " at = (r % " + num(positions) + ") * " + R + " + i;");
  k.line("const float c = " + cos + "[at], s = " + sin + "[at];");
  // Forward: a' = a c - b s, b' = b c + a s; the gradient swaps the signs.
  const std::string first_sign = grad ? " + " : " - ", second_sign = grad ? " - " : " + ";
  k.line(y + "[g] = first ? " + x + "[g] * c" + first_sign + x + "[partner] * s : " + x + "[g] * c" + second_sign + x +
         "[partner] * s;");
  launch(ctx, k, static_cast<int32_t>(node), count, ctx.target.elementwise_group);
}

}  // namespace kiln::ocl
