// One kernel for a run of fused elementwise nodes: every work item loads its
// element of each input once, evaluates the nodes in order in registers, and
// stores the values that leave the kernel at the end.
//
// GELU uses x * sigmoid(2u) (= 0.5 x (1 + tanh u)) with the sigmoid written
// around exp(-2|u|): 1 + tanh(u) cancels catastrophically for negative u in
// float, this form keeps full relative precision on both sides. SILU's
// sigmoid is written around exp(-|x|) the same way.
//
// GELU_ERF uses OpenCL C's erfc (within 16 ulp by the spec): 0.5 x erfc(-x /
// sqrt 2) is the exact GELU without the cancellation of 1 + erf at negative x.
//
// CLAMP uses comparisons rather than fmin/fmax (which return the other
// operand for a NaN) so that a NaN stays NaN; its bounds are constants.
#include <map>

#include "emit.h"

namespace kiln::ocl {
namespace {

// sqrt(2/pi) and the cubic coefficient of the tanh approximation.
constexpr double kGeluK = 0.7978845608028654;
constexpr double kGeluC = 0.044715;

std::string v(uint32_t id) { return "v" + std::to_string(id); }

}  // namespace

// Ops fused into elementwise kernels (a fused unit may also hold an f32 RESHAPE).
constexpr kiln_op kElementwiseOpsList[] = {
    KILN_OP_FILL,          KILN_OP_ADD,        KILN_OP_MUL,      KILN_OP_SCALE,         KILN_OP_GELU,
    KILN_OP_GELU_GRAD,     KILN_OP_ADAMW,      KILN_OP_SILU,     KILN_OP_SILU_GRAD,     KILN_OP_CLAMP,
    KILN_OP_CLAMP_GRAD,    KILN_OP_DROPOUT,    KILN_OP_GELU_ERF, KILN_OP_GELU_ERF_GRAD, KILN_OP_EXP,
    KILN_OP_LOG,           KILN_OP_TANH,       KILN_OP_ERF,      KILN_OP_MAXIMUM,       KILN_OP_SELECT,
    KILN_OP_DROPOUT_KEYED, KILN_OP_ADAMW_CLIP,
};
const std::span<const kiln_op> kElementwiseOps{kElementwiseOpsList};

void emit_elementwise(EmitContext& ctx, const Unit& unit, const std::vector<bool>& stored) {
  const auto& g = ctx.g;
  const int64_t count = ctx.info[unit.nodes[0]].count;
  const std::string I = idx(static_cast<uint64_t>(count));
  Kernel k;
  std::map<uint32_t, std::string> loaded;  // external value -> pointer
  std::map<uint32_t, bool> produced;
  std::vector<std::string> body;
  // Loads an external input at index i, or broadcast as a suffix.
  // A 16-bit value is widened as it is loaded; one made in this kernel is
  // read rounded to its dtype, as if stored and loaded (the reference rounds
  // every op's output), so a fused chain gives the unfused result.
  auto operand = [&](uint32_t id, int64_t numel) -> std::string {
    const kiln_dtype dt = g.values[id].dtype;
    if (produced.count(id)) return round_float(dt, v(id));
    auto it = loaded.find(id);
    if (it == loaded.end()) it = loaded.emplace(id, k.param(value(id), float_pointer_type(dt, false))).first;
    if (numel == count) return load_float(dt, it->second, "i");
    if (numel == 1) return load_float(dt, it->second, "0");
    return load_float(dt, it->second, "i % " + num(static_cast<uint64_t>(numel)));
  };
  // One node's lines (a lambda rather than the loop body, so its string
  // building is plainly per node, not per element).
  auto emit_node = [&](uint32_t ni) {
    const ir::DecodedNode& n = g.nodes[ni];
    const NodeInfo& inf = ctx.info[ni];
    auto in = [&](size_t i) { return operand(n.inputs[i], g.values[n.inputs[i]].numel()); };
    const std::string y = v(n.outputs[0]);
    switch (n.op) {
      case KILN_OP_FILL: body.push_back("const float " + y + " = " + flt(n.fattrs[0]) + ";"); break;
      case KILN_OP_ADD: {
        const std::string a = in(0), b = operand(n.inputs[1], inf.bcast);
        body.push_back("const float " + y + " = " + a + " + " + b + ";");
      } break;
      case KILN_OP_MUL: {
        const std::string a = in(0), b = operand(n.inputs[1], inf.bcast);
        body.push_back("const float " + y + " = " + a + " * " + b + ";");
      } break;
      case KILN_OP_SCALE: body.push_back("const float " + y + " = " + in(0) + " * " + flt(n.fattrs[0]) + ";"); break;
      case KILN_OP_RESHAPE:
      case KILN_OP_CAST:  // the conversion is in the load and the store
        body.push_back("const float " + y + " = " + in(0) + ";");
        break;
      case KILN_OP_GELU:
      case KILN_OP_GELU_GRAD: {
        const std::string x = in(0);
        const std::string dy = n.op == KILN_OP_GELU_GRAD ? in(1) : std::string();
        const std::string K = flt(static_cast<float>(kGeluK));
        body.push_back("float " + y + ";");
        body.push_back("{");
        body.push_back("  const float x = " + x + ";");
        body.push_back("  const float u = " + K + " * (x + " + flt(static_cast<float>(kGeluC)) + " * x * x * x);");
        body.push_back("  const float a = exp(-2.0f * fabs(u));");
        body.push_back("  const float s = (u >= 0.0f ? 1.0f : a) / (1.0f + a);  // sigmoid(2u)");
        if (n.op == KILN_OP_GELU) {
          body.push_back("  " + y + " = x * s;");
        } else {
          body.push_back("  const float t = (u >= 0.0f ? a : 1.0f) / (1.0f + a);  // 1 - sigmoid(2u)");
          body.push_back("  const float du = " + K + " * (1.0f + " + flt(static_cast<float>(3.0 * kGeluC)) +
                         " * x * x);");
          body.push_back("  " + y + " = " + dy + " * (s + 2.0f * x * s * t * du);");
        }
        body.push_back("}");
        break;
      }
      case KILN_OP_GELU_ERF:
      case KILN_OP_GELU_ERF_GRAD: {
        const std::string x = in(0);
        const std::string dy = n.op == KILN_OP_GELU_ERF_GRAD ? in(1) : std::string();
        body.push_back("float " + y + ";");
        body.push_back("{");
        body.push_back("  const float x = " + x + ";");
        body.push_back("  const float cdf = 0.5f * erfc(-0.70710678118654752f * x);");
        if (n.op == KILN_OP_GELU_ERF) {
          body.push_back("  " + y + " = x * cdf;");
        } else {
          body.push_back("  const float pdf = 0.39894228040143268f * exp(-0.5f * x * x);");
          body.push_back("  " + y + " = " + dy + " * (cdf + x * pdf);");
        }
        body.push_back("}");
        break;
      }
      case KILN_OP_SILU:
      case KILN_OP_SILU_GRAD: {
        const std::string x = in(0);
        const std::string dy = n.op == KILN_OP_SILU_GRAD ? in(1) : std::string();
        body.push_back("float " + y + ";");
        body.push_back("{");
        body.push_back("  const float x = " + x + ";");
        body.push_back("  const float a = exp(-fabs(x));");
        body.push_back("  const float s = (x >= 0.0f ? 1.0f : a) / (1.0f + a);  // sigmoid(x)");
        if (n.op == KILN_OP_SILU) {
          body.push_back("  " + y + " = x * s;");
        } else {
          body.push_back("  const float t = (x >= 0.0f ? a : 1.0f) / (1.0f + a);  // 1 - sigmoid(x)");
          body.push_back("  " + y + " = " + dy + " * (s * (1.0f + x * t));");
        }
        body.push_back("}");
        break;
      }
      case KILN_OP_CLAMP: {
        const std::string x = in(0), lo = flt(n.fattrs[0]), hi = flt(n.fattrs[1]);
        body.push_back("const float " + y + " = " + x + " < " + lo + " ? " + lo + " : (" + x + " > " + hi + " ? " + hi +
                       " : " + x + ");");
        break;
      }
      case KILN_OP_CLAMP_GRAD: {
        const std::string x = in(0), dy = in(1), lo = flt(n.fattrs[0]), hi = flt(n.fattrs[1]);
        body.push_back("const float " + y + " = " + x + " >= " + lo + " && " + x + " <= " + hi + " ? " + dy +
                       " : 0.0f;");
        break;
      }
      // The math primitives: OpenCL C's built-ins (exp, log, tanh within 4 ulp
      // by the spec, erf within 16); MAXIMUM and SELECT as comparisons, so a NaN
      // follows the table (fmax would drop it).
      case KILN_OP_EXP: body.push_back("const float " + y + " = exp(" + in(0) + ");"); break;
      case KILN_OP_LOG: body.push_back("const float " + y + " = log(" + in(0) + ");"); break;
      // tanh is +-1 in float from |x| = 9.1; PoCL's built-in returns a value
      // just short of it there (within its 5 ulp), and x (1 - tanh) in SiLU's
      // decomposition then gives inf for NaN at the infinities.
      case KILN_OP_TANH: {
        const std::string x = in(0);
        body.push_back("const float " + y + " = fabs(" + x + ") >= 9.1f ? copysign(1.0f, " + x + ") : tanh(" + x +
                       ");");
        break;
      }
      case KILN_OP_ERF: body.push_back("const float " + y + " = erf(" + in(0) + ");"); break;
      case KILN_OP_MAXIMUM: {
        const std::string a = in(0), b = operand(n.inputs[1], inf.bcast);
        body.push_back("const float " + y + " = isnan(" + a + ") || isnan(" + b + ") ? NAN : (" + a + " < " + b +
                       " ? " + b + " : " + a + ");");
        break;
      }
      case KILN_OP_SELECT:
        body.push_back("const float " + y + " = " + in(0) + " <= " + in(1) + " ? " + in(2) + " : " + in(3) + ";");
        break;
      case KILN_OP_ADAMW:
      case KILN_OP_ADAMW_CLIP: {
        const float b1 = n.fattrs[0], b2 = n.fattrs[1], eps = n.fattrs[2];
        const std::string p = in(0), m = in(2), vv = in(3);
        // ADAMW_CLIP: the f32 product with the clip factor, rounded to the gradient's dtype.
        const std::string grad =
            n.op == KILN_OP_ADAMW ? in(1) : round_float(g.values[n.inputs[1]].dtype, "(" + in(1) + " * " + in(5) + ")");
        operand(n.inputs[4], 5);  // registers the hyper-parameters
        const std::string hp = loaded.at(n.inputs[4]);
        const std::string gs = "g" + std::to_string(ni), m2 = v(n.outputs[1]), v2 = v(n.outputs[2]);
        body.push_back("const float " + gs + " = " + grad + " * " + hp + "[4];");
        body.push_back("const float " + m2 + " = " + flt(b1) + " * " + m + " + " +
                       flt(static_cast<float>(1.0 - static_cast<double>(b1))) + " * " + gs + ";");
        body.push_back("const float " + v2 + " = " + flt(b2) + " * " + vv + " + " +
                       flt(static_cast<float>(1.0 - static_cast<double>(b2))) + " * " + gs + " * " + gs + ";");
        std::string upd = m2 + " * " + hp + "[2] / (sqrt(" + v2 + " * " + hp + "[3]) + " + flt(eps) + ")";
        if (inf.weight_decay) upd += " + " + hp + "[1] * " + p;
        body.push_back("const float " + y + " = " + p + " - " + hp + "[0] * (" + upd + ");");
        break;
      }
      case KILN_OP_DROPOUT:
      case KILN_OP_DROPOUT_KEYED: {
        // The key ([4], or [5] with the site) is read whole by every work item (fusion.cpp: not at index).
        auto it = loaded.find(n.inputs[1]);
        if (it == loaded.end()) it = loaded.emplace(n.inputs[1], k.param(value(n.inputs[1]), "const int")).first;
        for (std::string& l : dropout_lines(y, in(0), it->second, "i", n, inf)) body.push_back(std::move(l));
        break;
      }
      default: fail(KILN_ERR_INTERNAL, std::string("no elementwise lowering for ") + op_name(n.op));
    }
    for (uint32_t o : n.outputs) produced[o] = true;
  };
  auto store = [&](uint32_t o) {
    const kiln_dtype dt = g.values[o].dtype;
    body.push_back(store_float(dt, k.param(value(o), float_pointer_type(dt, true)), "i", v(o)));
  };
  for (uint32_t ni : unit.nodes) emit_node(ni);
  for (uint32_t ni : unit.nodes)
    for (uint32_t o : g.nodes[ni].outputs)
      if (stored[o]) store(o);

  k.line("const " + I + " i = get_global_id(0);");
  k.line(guard("i", static_cast<uint64_t>(count), ctx.target.elementwise_group));
  for (const auto& l : body) k.line(l);
  launch(ctx, k, static_cast<int32_t>(unit.nodes[0]), static_cast<uint64_t>(count), ctx.target.elementwise_group);
}

// CAST between the float dtypes: no fusible op (the op table gives it no
// elementwise property), so a kernel of its own, written as a one-node chain.
constexpr kiln_op kCastOpsList[] = {
    KILN_OP_CAST,
};
const std::span<const kiln_op> kCastOps{kCastOpsList};

void emit_cast(EmitContext& ctx, uint32_t node) {
  const std::vector<bool> stored(ctx.g.values.size(), true);
  emit_elementwise(ctx, Unit{{node}, true}, stored);
}

}  // namespace kiln::ocl
