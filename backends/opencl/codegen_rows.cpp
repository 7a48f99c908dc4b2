// Row-wise ops: layernorm and rmsnorm (and the dx part of their gradients), causal softmax
// (within documents too) and its gradient, cross entropy and its gradient. Each row is reduced
// either by one work item (CPU devices, and short rows) or by one work group
// with a tree in local memory; both orders are fixed at compile time, so
// results are deterministic run to run.
#include "emit.h"

namespace kiln::ocl {
namespace {

class Rows {
 public:
  Rows(const Target& t, int64_t rows, int64_t cols)
      : rows_(static_cast<uint64_t>(rows)), cols_(static_cast<uint64_t>(cols)) {
    per_item_ = t.row_per_item || cols <= 32;
    group_ = per_item_ ? 0 : pow2_floor(std::min<uint64_t>(t.max_work_group, pow2_floor(cols_ * 2 - 1)));
    I = idx(rows_ * cols_ + 1);
  }

  std::string I;  // index type
  std::string C() const { return num(cols_); }
  bool per_item() const { return per_item_; }

  void begin(Kernel& k) const {
    if (per_item_) {
      k.line("const " + I + " r = get_global_id(0);");
      k.line("if (r >= " + num(rows_) + ") return;");
    } else {
      k.line("const " + I + " r = get_group_id(0);");
      k.line("const uint t = get_local_id(0);");
      k.line("__local float red[" + num(group_) + "];");
    }
  }

  // float `name` = reduction over j < bound of `expr`, after `pre` runs
  // for each j. `op` is "+" or "max".
  void reduce(Kernel& k, const std::string& name, const std::string& op, const std::string& expr,
              const std::string& bound, const std::string& pre = "") const {
    const bool sum = op == "+";
    const std::string init = sum ? "0.0f" : "(-INFINITY)";
    auto combine = [&](const std::string& a, const std::string& b) {
      return sum ? a + " + " + b : "fmax(" + a + ", " + b + ")";
    };
    k.line("float " + name + ";");
    k.line("{");
    k.line("  float acc = " + init + ";");
    const std::string loop = per_item_ ? "for (" + I + " j = 0; j < " + bound + "; ++j)"
                                       : "for (" + I + " j = t; j < " + bound + "; j += " + num(group_) + ")";
    k.line("  " + loop + " {");
    if (!pre.empty()) k.line("    " + pre);
    k.line("    acc = " + combine("acc", "(" + expr + ")") + ";");
    k.line("  }");
    if (per_item_) {
      k.line("  " + name + " = acc;");
    } else {
      k.line("  red[t] = acc;");
      k.line("  barrier(CLK_LOCAL_MEM_FENCE);");
      k.line("  for (uint s = " + num(group_ / 2) + "; s > 0; s >>= 1) {");
      k.line("    if (t < s) red[t] = " + combine("red[t]", "red[t + s]") + ";");
      k.line("    barrier(CLK_LOCAL_MEM_FENCE);");
      k.line("  }");
      k.line("  " + name + " = red[0];");
      k.line("  barrier(CLK_LOCAL_MEM_FENCE);");
    }
    k.line("}");
  }

  // Runs `stmt` for every j < bound of the row.
  void each(Kernel& k, const std::string& stmt, const std::string& bound) const {
    const std::string loop = per_item_ ? "for (" + I + " j = 0; j < " + bound + "; ++j)"
                                       : "for (" + I + " j = t; j < " + bound + "; j += " + num(group_) + ")";
    k.line(loop + " " + stmt);
  }

  // Runs `stmt` once per row.
  void once(Kernel& k, const std::string& stmt) const { k.line(per_item_ ? stmt : "if (t == 0) { " + stmt + " }"); }

  void run(EmitContext& ctx, const Kernel& k, uint32_t node) const {
    if (per_item_)
      launch(ctx, k, static_cast<int32_t>(node), rows_, std::min<uint64_t>(64, ctx.target.max_work_group));
    else
      launch(ctx, k, static_cast<int32_t>(node), rows_ * group_, group_);
  }

 private:
  uint64_t rows_, cols_;
  bool per_item_ = true;
  uint64_t group_ = 0;
};

std::string row_ptr(Kernel& k, const Operand& op, const std::string& type, const std::string& name, const Rows& rows) {
  const std::string p = k.param(op, type);
  k.line("__global " + type + "* " + name + " = " + p + " + r * " + rows.C() + ";");
  return name;
}

void layernorm(EmitContext& ctx, uint32_t node) {
  const ir::DecodedNode& n = ctx.g.nodes[node];
  const NodeInfo& inf = ctx.info[node];
  Rows R(ctx.target, inf.rows, inf.cols);
  Kernel k;
  R.begin(k);
  row_ptr(k, value(n.inputs[0]), "const float", "xr", R);
  const std::string gamma = k.param(value(n.inputs[1]), "const float");
  const std::string beta = k.param(value(n.inputs[2]), "const float");
  row_ptr(k, value(n.outputs[0]), "float", "yr", R);
  const std::string C = R.C();
  R.reduce(k, "s", "+", "xr[j]", C);
  k.line("const float mean = s / " + C + ";");
  R.reduce(k, "q", "+", "(xr[j] - mean) * (xr[j] - mean)", C);
  k.line("const float rstd = 1.0f / sqrt(q / " + C + " + " + flt(n.fattrs[0]) + ");");
  R.each(k, "yr[j] = (xr[j] - mean) * rstd * " + gamma + "[j] + " + beta + "[j];", C);
  R.run(ctx, k, node);
}

void layernorm_grad(EmitContext& ctx, uint32_t node) {
  const ir::DecodedNode& n = ctx.g.nodes[node];
  const NodeInfo& inf = ctx.info[node];
  Rows R(ctx.target, inf.rows, inf.cols);
  // Per-row mean and 1/std, kept for the column sums of dgamma.
  const Operand stats = ctx.temp(2 * static_cast<uint64_t>(inf.rows));
  Kernel k;
  R.begin(k);
  row_ptr(k, value(n.inputs[0]), "const float", "xr", R);
  const std::string gamma = k.param(value(n.inputs[1]), "const float");
  row_ptr(k, value(n.inputs[2]), "const float", "dyr", R);
  row_ptr(k, value(n.outputs[0]), "float", "dxr", R);
  const std::string st = k.param(stats, "float");
  const std::string C = R.C();
  R.reduce(k, "s", "+", "xr[j]", C);
  k.line("const float mean = s / " + C + ";");
  R.reduce(k, "q", "+", "(xr[j] - mean) * (xr[j] - mean)", C);
  k.line("const float rstd = 1.0f / sqrt(q / " + C + " + " + flt(n.fattrs[0]) + ");");
  R.reduce(k, "sg", "+", "dyr[j] * " + gamma + "[j]", C);
  R.reduce(k, "sgx", "+", "dyr[j] * " + gamma + "[j] * ((xr[j] - mean) * rstd)", C);
  k.line("const float mean_g = sg / " + C + ";");
  k.line("const float mean_gx = sgx / " + C + ";");
  R.each(k, "dxr[j] = rstd * (dyr[j] * " + gamma + "[j] - mean_g - ((xr[j] - mean) * rstd) * mean_gx);", C);
  R.once(k, st + "[2 * r] = mean; " + st + "[2 * r + 1] = rstd;");
  R.run(ctx, k, node);

  const std::string at = "r * " + C + " + c";
  emit_column_sums(ctx, static_cast<int32_t>(node), inf.rows, inf.cols,
                   {{value(n.inputs[0]), "const float"}, {value(n.inputs[2]), "const float"}, {stats, "const float"}},
                   {"p1[" + at + "] * ((p0[" + at + "] - p2[2 * r]) * p2[2 * r + 1])", "p1[" + at + "]"},
                   {value(n.outputs[1]), value(n.outputs[2])});
}

// RMSNORM: layernorm without the mean and the bias.
void rmsnorm(EmitContext& ctx, uint32_t node) {
  const ir::DecodedNode& n = ctx.g.nodes[node];
  const NodeInfo& inf = ctx.info[node];
  Rows R(ctx.target, inf.rows, inf.cols);
  Kernel k;
  R.begin(k);
  row_ptr(k, value(n.inputs[0]), "const float", "xr", R);
  const std::string gamma = k.param(value(n.inputs[1]), "const float");
  row_ptr(k, value(n.outputs[0]), "float", "yr", R);
  const std::string C = R.C();
  R.reduce(k, "q", "+", "xr[j] * xr[j]", C);
  k.line("const float rstd = 1.0f / sqrt(q / " + C + " + " + flt(n.fattrs[0]) + ");");
  R.each(k, "yr[j] = xr[j] * rstd * " + gamma + "[j];", C);
  R.run(ctx, k, node);
}

// RMSNORM_GRAD: dx = rstd (g - xhat mean(g xhat)) per row, with xhat = x rstd
// and g = dy gamma; then dgamma = sum over rows of dy xhat, from each row's
// rstd kept in a temporary.
void rmsnorm_grad(EmitContext& ctx, uint32_t node) {
  const ir::DecodedNode& n = ctx.g.nodes[node];
  const NodeInfo& inf = ctx.info[node];
  Rows R(ctx.target, inf.rows, inf.cols);
  const Operand stats = ctx.temp(static_cast<uint64_t>(inf.rows));
  Kernel k;
  R.begin(k);
  row_ptr(k, value(n.inputs[0]), "const float", "xr", R);
  const std::string gamma = k.param(value(n.inputs[1]), "const float");
  row_ptr(k, value(n.inputs[2]), "const float", "dyr", R);
  row_ptr(k, value(n.outputs[0]), "float", "dxr", R);
  const std::string st = k.param(stats, "float");
  const std::string C = R.C();
  R.reduce(k, "q", "+", "xr[j] * xr[j]", C);
  k.line("const float rstd = 1.0f / sqrt(q / " + C + " + " + flt(n.fattrs[0]) + ");");
  R.reduce(k, "sgx", "+", "dyr[j] * " + gamma + "[j] * (xr[j] * rstd)", C);
  k.line("const float mean_gx = sgx / " + C + ";");
  R.each(k, "dxr[j] = rstd * (dyr[j] * " + gamma + "[j] - (xr[j] * rstd) * mean_gx);", C);
  R.once(k, st + "[r] = rstd;");
  R.run(ctx, k, node);

  const std::string at = "r * " + C + " + c";
  emit_column_sums(ctx, static_cast<int32_t>(node), inf.rows, inf.cols,
                   {{value(n.inputs[0]), "const float"}, {value(n.inputs[2]), "const float"}, {stats, "const float"}},
                   {"p1[" + at + "] * (p0[" + at + "] * p2[r])"}, {value(n.outputs[1])});
}

void causal_softmax(EmitContext& ctx, uint32_t node) {
  const ir::DecodedNode& n = ctx.g.nodes[node];
  const NodeInfo& inf = ctx.info[node];
  Rows R(ctx.target, inf.rows, inf.cols);
  Kernel k;
  R.begin(k);
  row_ptr(k, value(n.inputs[0]), "const float", "xr", R);
  row_ptr(k, value(n.outputs[0]), "float", "yr", R);
  const std::string s = flt(n.fattrs[0]);
  k.line("const " + R.I + " i = r % " + R.C() + ";");
  // DOCUMENT_SOFTMAX: keys before the row's document start (clamped to
  // [0, i]) are masked too; sample b holds rows / batch of the rows.
  std::string first = "0";
  if (n.op == KILN_OP_DOCUMENT_SOFTMAX) {
    const std::string starts = k.param(value(n.inputs[1]), "const int");
    k.line("const int s0 = " + starts + "[r / " + num(static_cast<uint64_t>(inf.rows / inf.batch)) + " * " + R.C() +
           " + i];");
    k.line("const " + R.I + " first = s0 < 0 ? 0 : ((" + R.I + ")s0 > i ? i : (" + R.I + ")s0);");
    first = "first";
  }
  const std::string visible = "(j >= " + first + " && j <= i)";
  R.reduce(k, "mx", "max", "j >= " + first + " ? " + s + " * xr[j] : (-INFINITY)", "i + 1");
  // The exponentials go to y first and are divided in place afterwards.
  R.reduce(k, "sum", "+", "e", "i + 1",
           "const float e = j >= " + first + " ? exp(" + s + " * xr[j] - mx) : 0.0f; yr[j] = e;");
  R.each(k, "yr[j] = " + visible + " ? yr[j] / sum : 0.0f;", R.C());
  R.run(ctx, k, node);
}

void softmax_grad(EmitContext& ctx, uint32_t node) {
  const ir::DecodedNode& n = ctx.g.nodes[node];
  const NodeInfo& inf = ctx.info[node];
  Rows R(ctx.target, inf.rows, inf.cols);
  Kernel k;
  R.begin(k);
  row_ptr(k, value(n.inputs[0]), "const float", "yr", R);
  row_ptr(k, value(n.inputs[1]), "const float", "dyr", R);
  row_ptr(k, value(n.outputs[0]), "float", "dxr", R);
  R.reduce(k, "dot", "+", "dyr[j] * yr[j]", R.C());
  R.each(k, "dxr[j] = " + flt(n.fattrs[0]) + " * yr[j] * (dyr[j] - dot);", R.C());
  R.run(ctx, k, node);
}

// Loads the row's target and sets `bad` (and the error flag) when it is out
// of range.
void target_of_row(Kernel& k, const Rows& R, const std::string& targets, const std::string& flag, const NodeInfo& inf) {
  k.line("const int tg = " + targets + "[r];");
  k.line("const bool bad = tg < 0 || tg >= " + std::to_string(inf.cols) + ";");
  R.once(k, "if (bad) " + flag + ";");
}

std::string target_check(uint32_t node, const NodeInfo& inf) {
  return "node " + std::to_string(node) + " (" + op_name(inf.op) + "): a target is out of range [0, " +
         std::to_string(inf.cols) + ")";
}

void cross_entropy(EmitContext& ctx, uint32_t node) {
  const ir::DecodedNode& n = ctx.g.nodes[node];
  const NodeInfo& inf = ctx.info[node];
  Rows R(ctx.target, inf.rows, inf.cols);
  const Operand losses = ctx.temp(static_cast<uint64_t>(inf.rows));
  Kernel k;
  R.begin(k);
  row_ptr(k, value(n.inputs[0]), "const float", "xr", R);
  const std::string targets = k.param(value(n.inputs[1]), "const int");
  const std::string lr = k.param(losses, "float");
  const std::string flag = k.flag_param(ctx.check(target_check(node, inf)));
  target_of_row(k, R, targets, flag, inf);
  R.reduce(k, "mx", "max", "xr[j]", R.C());
  R.reduce(k, "se", "+", "exp(xr[j] - mx)", R.C());
  R.once(k, lr + "[r] = bad ? NAN : (mx + log(se)) - xr[tg];");
  R.run(ctx, k, node);
  emit_serial_sum(ctx, static_cast<int32_t>(node), losses, static_cast<uint64_t>(inf.rows), false, value(n.outputs[0]),
                  static_cast<uint64_t>(inf.rows));
}

void cross_entropy_grad(EmitContext& ctx, uint32_t node) {
  const ir::DecodedNode& n = ctx.g.nodes[node];
  const NodeInfo& inf = ctx.info[node];
  Rows R(ctx.target, inf.rows, inf.cols);
  Kernel k;
  R.begin(k);
  row_ptr(k, value(n.inputs[0]), "const float", "xr", R);
  const std::string targets = k.param(value(n.inputs[1]), "const int");
  const std::string dloss = k.param(value(n.inputs[2]), "const float");
  row_ptr(k, value(n.outputs[0]), "float", "dr", R);
  const std::string flag = k.flag_param(ctx.check(target_check(node, inf)));
  target_of_row(k, R, targets, flag, inf);
  R.reduce(k, "mx", "max", "xr[j]", R.C());
  R.reduce(k, "se", "+", "exp(xr[j] - mx)", R.C());
  k.line("const float lse = mx + log(se);");
  k.line("const float scale = " + dloss + "[0] / " + flt(static_cast<float>(inf.rows)) + ";");
  R.each(k, "dr[j] = bad ? NAN : scale * (exp(xr[j] - lse) - (j == (" + R.I + ")tg ? 1.0f : 0.0f));", R.C());
  R.run(ctx, k, node);
}

}  // namespace

// Row-wise kernels.
constexpr kiln_op kRowOpsList[] = {
    KILN_OP_LAYERNORM,     KILN_OP_LAYERNORM_GRAD,     KILN_OP_RMSNORM,
    KILN_OP_RMSNORM_GRAD,  KILN_OP_CAUSAL_SOFTMAX,     KILN_OP_SOFTMAX_GRAD,
    KILN_OP_CROSS_ENTROPY, KILN_OP_CROSS_ENTROPY_GRAD, KILN_OP_DOCUMENT_SOFTMAX,
};
const std::span<const kiln_op> kRowOps{kRowOpsList};

void emit_rows(EmitContext& ctx, uint32_t node) {
  switch (ctx.g.nodes[node].op) {
    case KILN_OP_LAYERNORM: return layernorm(ctx, node);
    case KILN_OP_LAYERNORM_GRAD: return layernorm_grad(ctx, node);
    case KILN_OP_RMSNORM: return rmsnorm(ctx, node);
    case KILN_OP_RMSNORM_GRAD: return rmsnorm_grad(ctx, node);
    case KILN_OP_CAUSAL_SOFTMAX:
    case KILN_OP_DOCUMENT_SOFTMAX: return causal_softmax(ctx, node);
    case KILN_OP_SOFTMAX_GRAD: return softmax_grad(ctx, node);
    case KILN_OP_CROSS_ENTROPY: return cross_entropy(ctx, node);
    case KILN_OP_CROSS_ENTROPY_GRAD: return cross_entropy_grad(ctx, node);
    default: fail(KILN_ERR_INTERNAL, "emit_rows: not a row op");
  }
}

}  // namespace kiln::ocl
