// ATTENTION and ATTENTION_GRAD (kiln/ops.h), causal, as Vulkan's
// attention.comp computes them, and ATTENTION_DROPOUT(_GRAD) by the same
// kernels with the keep factor f of each probability (DROPOUT_KEYED's at
// its element of the [..., T, T] probabilities, codegen_dropout.cpp) drawn
// where the probability is formed: FlashAttention's online softmax, so the
// T x T probabilities are never stored. A work group takes QB query (or
// key) rows of one matrix; S work items share a row, E elements of it apiece
// (E * S = D), so private arrays stay small whatever the head size. A dot
// product of two rows is S partial sums, added from local memory in lane
// order; the other operand's rows come through local memory in tiles of BK.
//  ATTENTION: per query row, the running max m, sum l and output o,
//    rescaled by exp(m_old - m_new) as the max grows; y = o / l.
//  ATTENTION_GRAD, kernel 1: per query row, one sweep over its keys for m,
//    l and (rescaled as o is) sum_j p dy[i].v[j], then a second for
//    dq[i] = sum_j ds[i, j] k[j]; the row's lse and that sum go to a
//    unit temporary, which lives until the unit's last step.
//  ATTENTION_GRAD, kernel 2: per key row j, the query rows i >= j with
//    their stats: dv[j] = sum_i p dy[i], dk[j] = sum_i ds q[i].
//  With dropout, m and l stay the unmasked softmax's; o sums p f v, dp is
//    f dy[i].v[j] wherever it appears (so the row sums are sum_j p dp) and
//    dv sums p f dy. A tile's factors are drawn once per (query, key) pair,
//    a row's S work items taking turns, into local memory (fkeep).
// Every sum runs in a fixed order (keys or queries ascending) in f32, so
// results are the same run to run; 16-bit operands are widened on load and
// outputs rounded once at the store.
#include <algorithm>
#include <optional>

#include "attention_plan.h"
#include "emit.h"

namespace kiln::ocl {
namespace {

// A node's shape, its kernels' tiling (attention_plan.h) and the index type
// over every operand and the stats.
struct Plan : AttentionPlan {
  uint64_t mats = 0, T = 0, D = 0;
  std::string I;
};

// `p` holds the shape (none of it 0); the rest is chosen here.
void plan(const EmitContext& ctx, uint32_t node, Plan& p) {
  std::string why;
  const kiln_op op = ctx.g.nodes[node].op;
  const bool dropout = kiln_op_table[op].rule == KILN_RULE_ATTENTION_DROPOUT;
  const std::optional<AttentionPlan> tiles = plan_attention(ctx.target, p.T, p.D, dropout, &why);
  if (!tiles) fail(KILN_ERR_UNSUPPORTED, "node " + std::to_string(node) + " (" + op_name(op) + "): " + why);
  static_cast<AttentionPlan&>(p) = *tiles;
  p.I = idx(std::max(p.mats * p.T * p.D, 2 * p.mats * p.T) + 1);
}

// The pointer to value `id`, stored as its dtype.
struct Arg {
  std::string ptr;
  kiln_dtype dt;
};

Arg arg(Kernel& k, const EmitContext& ctx, uint32_t id, bool writable) {
  const kiln_dtype dt = ctx.val(id).dtype;
  return {k.param(value(id), float_pointer_type(dt, writable)), dt};
}

std::string ld(const Arg& a, const std::string& index) { return load_float(a.dt, a.ptr, index); }

// ATTENTION_DROPOUT(_GRAD)'s mask, nullopt for the plain ops: its key
// (the node's last input) becomes a kernel parameter.
std::optional<DropoutMask> dropout_mask(const ir::DecodedNode& n) {
  if (kiln_op_table[n.op].rule != KILN_RULE_ATTENTION_DROPOUT) return std::nullopt;
  return DropoutMask{n.fattrs[1], static_cast<uint64_t>(n.iattrs[0]), static_cast<uint64_t>(n.iattrs[1]), ""};
}

// Writes one kernel's text; D, T and BK are the sizes as literals.
class Writer {
 public:
  // With a mask, every dot product of a query row i with a key row j also
  // has that pair's keep factor f, drawn once per pair (dots).
  Writer(Kernel& k, const ir::DecodedNode& n, const Plan& p)
      : D(num(p.D)), T(num(p.T)), BK(num(p.BK)), k_(k), p_(p), mask_(dropout_mask(n)) {
    if (!mask_) return;
    key_ = k.param(value(n.inputs.back()), "const int");
    mask_->site = keyed_site(key_);
  }

  const std::string D, T, BK;

  // `x` times the keep factor, `x` itself without dropout.
  std::string kept(const std::string& x) const { return mask_ ? "(" + x + " * f)" : x; }

  // Where this work item stands, its private rows, and the local arrays.
  void begin() {
    const std::string& I = p_.I;
    k_.line("__local float tile0[" + num(p_.BK * p_.D) + "], tile1[" + num(p_.BK * p_.D) + "], tstat[" +
            num(2 * p_.BK) + "];");
    k_.line("__local float2 part[" + num(p_.QB * p_.BK * p_.S) + "];");
    // With a mask: per row and tile row, the keep factor (dots).
    if (mask_) k_.line("__local float fkeep[" + num(p_.QB * p_.BK) + "];");
    k_.line("const " + I + " mat = get_group_id(0) / " + num(p_.blocks) + ", at = mat * " + num(p_.T * p_.D) + ";");
    k_.line("const uint first = (uint)(get_group_id(0) % " + num(p_.blocks) + ") * " + num(p_.QB) + ";");
    k_.line("const uint lid = get_local_id(0), rb = lid / " + num(p_.S) + ", lane = lid % " + num(p_.S) + ";");
    k_.line("const uint e0 = lane * " + num(p_.E) + ", r = first + rb;");
    k_.line("const bool live = r < " + T + ";");
    k_.line("const " + I + " row = at + (" + I + ")r * " + D + " + e0;");
    // This work item's partials are part[pr + t * S]; its row's, part[pw + t * S + w].
    k_.line("const uint pw = rb * " + num(p_.BK * p_.S) + ", pr = pw + lane;");
    k_.line("float a[" + num(p_.E) + "], b[" + num(p_.E) + "], acc[" + num(p_.E) + "], acc2[" + num(p_.E) + "];");
  }

  // for each of this work item's elements u: `stmt`.
  void each(const std::string& stmt) { k_.line("for (uint u = 0; u < " + num(p_.E) + "; ++u) " + stmt); }

  // Rows [r0, r0 + BK) of two operands into the tiles (rows past T as 0);
  // with `stats`, those rows' (lse, sum) pairs too.
  void load_tiles(const std::string& r0, const Arg& x0, const Arg& x1, const std::string& stats = "") {
    const std::string G = num(p_.group());
    k_.line("  barrier(CLK_LOCAL_MEM_FENCE);");
    k_.line("  for (uint x = lid; x < " + num(p_.BK * p_.D) + "; x += " + G + ") {");
    k_.line("    const uint rr = " + r0 + " + x / " + D + ";");
    k_.line("    const " + p_.I + " i = at + (" + p_.I + ")rr * " + D + " + x % " + D + ";");
    k_.line("    tile0[x] = rr < " + T + " ? " + ld(x0, "i") + " : 0.0f;");
    k_.line("    tile1[x] = rr < " + T + " ? " + ld(x1, "i") + " : 0.0f;");
    k_.line("  }");
    if (!stats.empty()) {
      k_.line("  for (uint x = lid; x < " + num(2 * p_.BK) + "; x += " + G + ")");
      k_.line("    tstat[x] = " + r0 + " + x / 2u < " + T + " ? " + stats + "[mat * " + num(2 * p_.T) + " + 2u * " +
              r0 + " + x] : 0.0f;");
    }
    k_.line("  barrier(CLK_LOCAL_MEM_FENCE);");
  }

  // For tile rows t in [t0, t1): the row's dot products with them (q or k
  // against tile0, dy or v against tile1 when `dp`) as s (scaled) and dp,
  // then `body`. With dropout, f is the keep factor of the probability at
  // element `elem` (a query and key pair of the [..., T, T] matrices) and
  // dp is f dy.v, the gradient of the unmasked probability. The row's S
  // work items draw its factors in turn into fkeep before the barrier, not
  // each all of them; the next tile's load starts with a barrier, so none
  // is overwritten before every work item has read it.
  void dots(const std::string& t0, const std::string& t1, bool dp, float scale, const std::string& elem,
            const std::vector<std::string>& body) {
    const std::string at_t = "tile0[t * " + D + " + e0 + u]";
    k_.line("  for (uint t = " + t0 + "; t < " + t1 + "; ++t) {");
    k_.line("    float s = 0.0f, dp = 0.0f;");
    k_.line("    for (uint u = 0; u < " + num(p_.E) + "; ++u) {");
    k_.line("      s += a[u] * " + at_t + ";");
    if (dp) k_.line("      dp += b[u] * tile1[t * " + D + " + e0 + u];");
    k_.line("    }");
    k_.line("    part[pr + t * " + num(p_.S) + "] = (float2)(s, dp);");
    k_.line("  }");
    if (mask_) {
      k_.line("  for (uint t = " + t0 + " + lane; t < " + t1 + "; t += " + num(p_.S) + ") {");
      k_.line("    float f;");
      for (const std::string& l : dropout_factor_lines("f", elem, key_, *mask_)) k_.line("    " + l);
      k_.line("    fkeep[rb * " + BK + " + t] = f;");
      k_.line("  }");
    }
    k_.line("  barrier(CLK_LOCAL_MEM_FENCE);");
    k_.line("  for (uint t = " + t0 + "; t < " + t1 + "; ++t) {");
    k_.line("    float2 sd = (float2)(0.0f, 0.0f);");
    k_.line("    for (uint w = 0; w < " + num(p_.S) + "; ++w) sd += part[pw + t * " + num(p_.S) + " + w];");
    if (mask_) k_.line("    const float f = fkeep[rb * " + BK + " + t];");
    k_.line("    const float s = sd.x * " + flt(scale) + ", dp = " + kept("sd.y") + ";");
    for (const std::string& l : body) k_.line("    " + l);
    k_.line("  }");
  }

  // The query-row kernels' sweep over keys 0 .. the block's last row.
  void sweep_keys(const Arg& k, const Arg& v, bool dp, float scale, const std::vector<std::string>& body) {
    k_.line("for (uint j0 = 0; j0 < min(first + " + num(p_.QB) + ", " + T + "); j0 += " + BK + ") {");
    load_tiles("j0", k, v);
    k_.line("  const uint nt = live && r >= j0 ? min(" + BK + ", r + 1u - j0) : 0u;");
    // Query r against key j0 + t.
    dots("0u", "nt", dp, scale, "((ulong)mat * " + T + " + r) * " + T + " + j0 + t", body);
    k_.line("}");
  }

 private:
  Kernel& k_;
  const Plan& p_;
  std::optional<DropoutMask> mask_;
  std::string key_;  // the key's pointer, with a mask
};

// The online softmax's step to key score s: rescale what was summed under
// the old max m.
const std::vector<std::string> kOnlineMax = {"const float mn = fmax(m, s);",
                                             "const float c = exp(m - mn), pj = exp(s - mn);", "l = l * c + pj;"};

void forward(EmitContext& ctx, uint32_t node, const Plan& p) {
  const ir::DecodedNode& n = ctx.g.nodes[node];
  Kernel k;
  const Arg q = arg(k, ctx, n.inputs[0], false), kk = arg(k, ctx, n.inputs[1], false),
            v = arg(k, ctx, n.inputs[2], false), y = arg(k, ctx, n.outputs[0], true);
  Writer w(k, n, p);
  w.begin();
  w.each("{ a[u] = live ? " + ld(q, "row + u") + " : 0.0f; acc[u] = 0.0f; }");
  k.line("float m = -INFINITY, l = 0.0f;");
  std::vector<std::string> body = kOnlineMax;
  body.push_back("for (uint u = 0; u < " + num(p.E) + "; ++u) acc[u] = acc[u] * c + " + w.kept("pj") + " * tile1[t * " +
                 w.D + " + e0 + u];");
  body.emplace_back("m = mn;");
  w.sweep_keys(kk, v, false, n.fattrs[0], body);
  k.line("if (!live) return;");
  w.each(store_float(y.dt, y.ptr, "row + u", "acc[u] / l"));
  launch(ctx, k, static_cast<int32_t>(node), p.mats * p.blocks * p.group(), p.group());
}

void backward(EmitContext& ctx, uint32_t node, const Plan& p) {
  const ir::DecodedNode& n = ctx.g.nodes[node];
  const float scale = n.fattrs[0];
  // Each query row's lse and sum_j p dy.v: written by the first kernel,
  // read by the second. A unit temporary: kept until the unit's last step.
  const Operand stats = ctx.temp(2 * p.mats * p.T);
  {
    Kernel k;
    const Arg q = arg(k, ctx, n.inputs[0], false), kk = arg(k, ctx, n.inputs[1], false),
              v = arg(k, ctx, n.inputs[2], false), dy = arg(k, ctx, n.inputs[3], false),
              dq = arg(k, ctx, n.outputs[0], true);
    const std::string st = k.param(stats, "float");
    Writer w(k, n, p);
    w.begin();
    w.each("{ a[u] = live ? " + ld(q, "row + u") + " : 0.0f; b[u] = live ? " + ld(dy, "row + u") +
           " : 0.0f; acc[u] = 0.0f; }");
    k.line("float m = -INFINITY, l = 0.0f, pdp = 0.0f;");
    std::vector<std::string> body = kOnlineMax;
    body.emplace_back("pdp = pdp * c + pj * dp;");
    body.emplace_back("m = mn;");
    w.sweep_keys(kk, v, true, scale, body);
    k.line("const float lse = m + log(l), dyy = pdp / l;");
    w.sweep_keys(kk, v, true, scale,
                 {"const float ds = " + flt(scale) + " * exp(s - lse) * (dp - dyy);",
                  "for (uint u = 0; u < " + num(p.E) + "; ++u) acc[u] += ds * tile0[t * " + w.D + " + e0 + u];"});
    k.line("if (!live) return;");
    w.each(store_float(dq.dt, dq.ptr, "row + u", "acc[u]"));
    k.line("if (lane == 0u) { " + st + "[2u * (mat * " + w.T + " + r)] = lse; " + st + "[2u * (mat * " + w.T +
           " + r) + 1u] = dyy; }");
    launch(ctx, k, static_cast<int32_t>(node), p.mats * p.blocks * p.group(), p.group());
  }
  Kernel k;
  const Arg q = arg(k, ctx, n.inputs[0], false), kk = arg(k, ctx, n.inputs[1], false),
            v = arg(k, ctx, n.inputs[2], false), dy = arg(k, ctx, n.inputs[3], false),
            dk = arg(k, ctx, n.outputs[1], true), dv = arg(k, ctx, n.outputs[2], true);
  const std::string st = k.param(stats, "const float");
  Writer w(k, n, p);
  w.begin();
  w.each("{ a[u] = live ? " + ld(kk, "row + u") + " : 0.0f; b[u] = live ? " + ld(v, "row + u") +
         " : 0.0f; acc[u] = 0.0f; acc2[u] = 0.0f; }");
  // Query rows from the block's first key on: earlier ones see none of its keys.
  k.line("for (uint i0 = first - first % " + w.BK + "; i0 < " + w.T + "; i0 += " + w.BK + ") {");
  w.load_tiles("i0", q, dy, st);
  k.line("  const uint t0 = live ? max(i0, r) - i0 : " + w.BK + ", t1 = min(" + w.BK + ", " + w.T + " - i0);");
  // Query i0 + t against key r.
  w.dots("t0", "t1", true, scale, "((ulong)mat * " + w.T + " + i0 + t) * " + w.T + " + r",
         {"const float pij = exp(s - tstat[2u * t]);",
          "const float ds = " + flt(scale) + " * pij * (dp - tstat[2u * t + 1u]);",
          "for (uint u = 0; u < " + num(p.E) + "; ++u) {",
          "  acc2[u] += " + w.kept("pij") + " * tile1[t * " + w.D + " + e0 + u];",
          "  acc[u] += ds * tile0[t * " + w.D + " + e0 + u];", "}"});
  k.line("}");
  k.line("if (!live) return;");
  w.each("{ " + store_float(dk.dt, dk.ptr, "row + u", "acc[u]") + " " +
         store_float(dv.dt, dv.ptr, "row + u", "acc2[u]") + " }");
  launch(ctx, k, static_cast<int32_t>(node), p.mats * p.blocks * p.group(), p.group());
}

}  // namespace

// Fused causal attention.
constexpr kiln_op kAttentionOpsList[] = {KILN_OP_ATTENTION, KILN_OP_ATTENTION_GRAD, KILN_OP_ATTENTION_DROPOUT,
                                         KILN_OP_ATTENTION_DROPOUT_GRAD};
const std::span<const kiln_op> kAttentionOps{kAttentionOpsList};

void emit_attention(EmitContext& ctx, uint32_t node) {
  const ir::DecodedValue& q = ctx.val(ctx.g.nodes[node].inputs[0]);
  Plan p;
  p.T = static_cast<uint64_t>(q.dims[q.dims.size() - 2]);
  p.D = static_cast<uint64_t>(q.dims.back());
  if (q.numel() == 0) return;
  p.mats = static_cast<uint64_t>(q.numel()) / (p.T * p.D);
  plan(ctx, node, p);
  const kiln_op op = ctx.g.nodes[node].op;
  if (op == KILN_OP_ATTENTION || op == KILN_OP_ATTENTION_DROPOUT) return forward(ctx, node, p);
  backward(ctx, node, p);
}

}  // namespace kiln::ocl
