// CAST_FP8 (kiln/ops.h): the tensor's amax, the scale it gives (or the
// given one) and its reciprocal, then each element cast, in three kernels:
//   1. P work items each take the max of every P-th element (adjacent items
//      read adjacent elements: coalesced on GPUs, vectorised by PoCL);
//   2. one work group reduces the P partials in local memory, and its first
//      item writes amax and computes s and 1/s once for the whole tensor;
//   3. one work item per element: y = scaled_round(x, s, 1/s), stored in x's
//      dtype (a 16-bit y rounded once, as every store).
// The op is bit exact, so the math is kiln/fp8.h's ported line for line to
// integer OpenCL C (kFp8Prelude): OpenCL's f32 division is not correctly
// rounded, so 1/s and fp8_max/amax are integer long divisions, and the only
// float operations are the two products x * s and q * (1/s), which feed
// as_uint or the store (and the program's FP_CONTRACT OFF forbids fusing
// them anyway). amax is a max over the bits of |x|, whose order is the
// values', so the partition into partials cannot change it; s and 1/s pass
// between kernels as bits, never through float arithmetic.
#include <algorithm>

#include "emit.h"

namespace kiln::ocl {
namespace {

// Elements each partial-amax work item reads (about), and the most partials.
constexpr uint64_t kElementsPerItem = 64;
constexpr uint64_t kMaxPartials = 65536;

// Kernel 1: partial[q] = amax bits over x[q], x[q + P], ... (P partials).
void partial_amax(EmitContext& ctx, int32_t node, uint32_t x_id, const Operand& partial, uint64_t count,
                  uint64_t partials) {
  const kiln_dtype dt = ctx.val(x_id).dtype;
  Kernel k;
  const std::string x = k.param(value(x_id), float_pointer_type(dt, false));
  const std::string part = k.param(partial, "uint");
  const std::string I = idx(count + partials);
  k.line("const " + I + " q = get_global_id(0);");
  k.line("uint m = 0u;");
  k.line("for (" + I + " j = q; j < " + num(count) + "; j += " + num(partials) + ") m = kiln_fp8_amax_bits(m, " +
         load_float(dt, x, "j") + ");");
  k.line(part + "[q] = m;");
  launch(ctx, k, node, partials, ctx.target.elementwise_group);
}

// Kernel 2: amax of the partials (a tree over one work group), then amax,
// s and 1/s as bits: params = {s, 1/s}.
void scale_from_partials(EmitContext& ctx, int32_t node, const ir::DecodedNode& n, const NodeInfo& inf,
                         const Operand& partial, uint64_t partials, const Operand& params) {
  const uint64_t group = pow2_floor(std::min<uint64_t>({ctx.target.max_work_group, partials, 256}));
  const std::string F = std::to_string(inf.fp8_format);
  Kernel k;
  const std::string part = k.param(partial, "const uint");
  // The given scale is read only by the delayed recipe; its bits are copied.
  const std::string scale = inf.fp8_current ? std::string() : k.param(value(n.inputs[1]), "const uint");
  const std::string amax = k.param(value(n.outputs[1]), "uint");
  const std::string out = k.param(params, "uint");
  k.line("const uint t = get_local_id(0);");
  k.line("__local uint red[" + num(group) + "];");
  k.line("uint m = 0u;");
  k.line("for (uint j = t; j < " + num(partials) + "; j += " + num(group) + ") m = max(m, " + part + "[j]);");
  k.line("red[t] = m;");
  k.line("barrier(CLK_LOCAL_MEM_FENCE);");
  k.line("for (uint w = " + num(group / 2) + "; w > 0u; w >>= 1) {");
  k.line("  if (t < w) red[t] = max(red[t], red[t + w]);");
  k.line("  barrier(CLK_LOCAL_MEM_FENCE);");
  k.line("}");
  k.line("if (t == 0u) {");
  k.line("  " + amax + "[0] = red[0];");
  k.line("  const uint s = " +
         (inf.fp8_current ? "as_uint(kiln_fp8_current_scale(as_float(red[0]), " + F + "))" : scale + "[0]") + ";");
  k.line("  " + out + "[0] = s;");
  k.line("  " + out + "[1] = as_uint(kiln_fp8_div(1.0f, as_float(s)));");
  k.line("}");
  launch(ctx, k, node, group, group);
}

// Kernel 3: y[i] = kiln_fp8_scaled_round(x[i], s, 1/s) in x's dtype.
void cast_elements(EmitContext& ctx, int32_t node, const ir::DecodedNode& n, const NodeInfo& inf, const Operand& params,
                   uint64_t count) {
  const kiln_dtype dt = ctx.val(n.inputs[0]).dtype;
  Kernel k;
  const std::string x = k.param(value(n.inputs[0]), float_pointer_type(dt, false));
  const std::string p = k.param(params, "const uint");
  const std::string y = k.param(value(n.outputs[0]), float_pointer_type(dt, true));
  const std::string I = idx(count + 1);
  k.line("const " + I + " i = get_global_id(0);");
  k.line(guard("i", count, ctx.target.elementwise_group));
  k.line("const float v = kiln_fp8_scaled_round(" + load_float(dt, x, "i") + ", as_float(" + p + "[0]), as_float(" + p +
         "[1]), " + std::to_string(inf.fp8_format) + ");");
  k.line(store_float(dt, y, "i", "v"));
  launch(ctx, k, node, count, ctx.target.elementwise_group);
}

}  // namespace

// FP8_GRAD_CAST is not listed: a composite, the host runs its RESHAPE.
constexpr kiln_op kFp8OpsList[] = {KILN_OP_CAST_FP8};
const std::span<const kiln_op> kFp8Ops{kFp8OpsList};

void emit_cast_fp8(EmitContext& ctx, uint32_t node) {
  const ir::DecodedNode& n = ctx.g.nodes[node];
  const NodeInfo& inf = ctx.info[node];
  if (n.op != KILN_OP_CAST_FP8) fail(KILN_ERR_INTERNAL, "emit_cast_fp8: not cast_fp8");
  const auto nd = static_cast<int32_t>(node);
  const auto count = static_cast<uint64_t>(inf.count);
  const uint64_t group = ctx.target.elementwise_group;
  // A multiple of the work group, so kernel 1 needs no bounds check (an
  // item past the end writes 0, the amax of nothing).
  const uint64_t partials = std::max(group, std::min(round_up((count + kElementsPerItem - 1) / kElementsPerItem, group),
                                                     round_up(kMaxPartials, group)));
  const Operand partial = ctx.temp(partials);
  const Operand params = ctx.temp(2);
  partial_amax(ctx, nd, n.inputs[0], partial, count, partials);
  scale_from_partials(ctx, nd, n, inf, partial, partials, params);
  cast_elements(ctx, nd, n, inf, params, count);
}

// kiln/fp8.h in OpenCL C, function for function (as_uint / as_float for its
// memcpy; format 0 is E4M3, 1 E5M2, always a literal at the call sites so
// the compiler folds the branches on it). Emitted only into programs that
// hold a CAST_FP8, so other programs keep their source byte for byte.
const char* const kFp8Prelude =
    "// FP8 (kiln/fp8.h): integer arithmetic only, so every device gives the\n"
    "// reference's bits; format 0 is E4M3, 1 E5M2.\n"
    "inline int kiln_fp8_mantissa_bits(int f) { return f == 0 ? 3 : 2; }\n"
    "inline int kiln_fp8_bias(int f) { return f == 0 ? 7 : 15; }\n"
    "inline uint kiln_fp8_max_code(int f) { return f == 0 ? 0x7Eu : 0x7Bu; }\n"
    "inline float kiln_fp8_max(int f) { return f == 0 ? 448.0f : 57344.0f; }\n"
    "inline float kiln_fp8_to_f32(uint code, int f) {\n"
    "  const int M = kiln_fp8_mantissa_bits(f), bias = kiln_fp8_bias(f);\n"
    "  const uint sign = (code & 0x80u) << 24;\n"
    "  const uint field = (code & 0x7Fu) >> M, mantissa = code & ((1u << M) - 1u);\n"
    "  uint bits;\n"
    "  if (f == 0 && (code & 0x7Fu) == 0x7Fu) {\n"
    "    bits = sign | 0x7FC00000u;\n"
    "  } else if (f == 1 && field == 31u) {\n"
    "    bits = sign | 0x7F800000u | (mantissa != 0u ? 0x400000u : 0u);\n"
    "  } else if (field == 0u) {\n"
    "    if (mantissa == 0u) {\n"
    "      bits = sign;\n"
    "    } else {\n"
    "      int exponent = 1 - bias;\n"
    "      uint m = mantissa;\n"
    "      while ((m & (1u << M)) == 0u) {\n"
    "        m <<= 1;\n"
    "        --exponent;\n"
    "      }\n"
    "      bits = sign | (uint)(exponent + 127) << 23 | (m & ((1u << M) - 1u)) << (23 - M);\n"
    "    }\n"
    "  } else {\n"
    "    bits = sign | (field - (uint)bias + 127u) << 23 | mantissa << (23 - M);\n"
    "  }\n"
    "  return as_float(bits);\n"
    "}\n"
    "inline uint kiln_fp8_shift_rne(uint x, int shift) {\n"
    "  const uint kept = x >> shift, rest = x & ((1u << shift) - 1u), halfway = 1u << (shift - 1);\n"
    "  return kept + ((rest > halfway || (rest == halfway && (kept & 1u) != 0u)) ? 1u : 0u);\n"
    "}\n"
    "inline uint kiln_f32_to_fp8(float value, int f) {\n"
    "  const int M = kiln_fp8_mantissa_bits(f), bias = kiln_fp8_bias(f);\n"
    "  const uint u = as_uint(value);\n"
    "  const uint sign = (u >> 24) & 0x80u, a = u & 0x7FFFFFFFu;\n"
    "  if (a > 0x7F800000u) return 0x7Fu;\n"
    "  if (a >= as_uint(kiln_fp8_max(f))) return sign | kiln_fp8_max_code(f);\n"
    "  const int exponent = (int)(a >> 23) - 127;\n"
    "  const uint significand = (a & 0x7FFFFFu) | (a >= 0x800000u ? 0x800000u : 0u);\n"
    "  uint q;\n"
    "  if (exponent < 1 - bias) {\n"
    "    const int e = a >= 0x800000u ? exponent : -126;\n"
    "    const int shift = 23 + (1 - bias - M) - e;\n"
    "    if (shift > 24) return sign;\n"
    "    q = kiln_fp8_shift_rne(significand, shift);\n"
    "  } else {\n"
    "    const uint x = (uint)(exponent + bias) << 23 | (a & 0x7FFFFFu);\n"
    "    q = kiln_fp8_shift_rne(x, 23 - M);\n"
    "  }\n"
    "  return sign | q;\n"
    "}\n"
    "// a / b correctly rounded by long division, for a positive normal a.\n"
    "inline float kiln_fp8_div(float a, float b) {\n"
    "  const uint ub = as_uint(b), sign = ub & 0x80000000u, ab = ub & 0x7FFFFFFFu;\n"
    "  if (ab > 0x7F800000u) return as_float(0x7FC00000u);\n"
    "  if (ab == 0x7F800000u) return as_float(sign);\n"
    "  if (ab == 0u) return as_float(sign | 0x7F800000u);\n"
    "  const uint ua = as_uint(a);\n"
    "  uint ma = (ua & 0x7FFFFFu) | 0x800000u, mb = (ab & 0x7FFFFFu) | 0x800000u;\n"
    "  int eb = (int)(ab >> 23);\n"
    "  if (eb == 0) {\n"
    "    mb = ab;\n"
    "    eb = 1;\n"
    "    while (mb < 0x800000u) {\n"
    "      mb <<= 1;\n"
    "      --eb;\n"
    "    }\n"
    "  }\n"
    "  int e = (int)(ua >> 23) - eb + 127;\n"
    "  if (ma < mb) {\n"
    "    ma <<= 1;\n"
    "    --e;\n"
    "  }\n"
    "  if (e >= 255) return as_float(sign | 0x7F800000u);\n"
    "  const int keep = e >= 1 ? 24 : 23 + e;\n"
    "  if (keep < 0) return as_float(sign);\n"
    "  uint q = 0u, r = ma;\n"
    "  for (int i = 0; i < keep; ++i) {\n"
    "    const uint bit = r >= mb ? 1u : 0u;\n"
    "    if (bit != 0u) r -= mb;\n"
    "    q = q << 1 | bit;\n"
    "    r <<= 1;\n"
    "  }\n"
    "  const uint guard = r >= mb ? 1u : 0u;\n"
    "  if (guard != 0u) r -= mb;\n"
    "  if (guard != 0u && (r != 0u || (q & 1u) != 0u)) ++q;\n"
    "  if (e < 1) return as_float(sign | q);\n"
    "  if (q == 1u << 24) {\n"
    "    q >>= 1;\n"
    "    if (++e >= 255) return as_float(sign | 0x7F800000u);\n"
    "  }\n"
    "  return as_float(sign | (uint)e << 23 | (q & 0x7FFFFFu));\n"
    "}\n"
    "// kiln_fp8_amax with the running amax held as its bits.\n"
    "inline uint kiln_fp8_amax_bits(uint acc, float x) {\n"
    "  const uint a = as_uint(x) & 0x7FFFFFFFu;\n"
    "  return a <= 0x7F800000u && a > acc ? a : acc;\n"
    "}\n"
    "inline float kiln_fp8_current_scale(float amax, int f) {\n"
    "  const uint a = as_uint(amax) & 0x7FFFFFFFu;\n"
    "  if (a == 0u || a >= 0x7F800000u) return 1.0f;\n"
    "  const float s = kiln_fp8_div(kiln_fp8_max(f), as_float(a));\n"
    "  return as_uint(s) == 0x7F800000u ? as_float(0x7F7FFFFFu) : s;\n"
    "}\n"
    "// Two f32 products, each rounded: the first feeds integer code, the\n"
    "// second is the result (FP_CONTRACT OFF besides).\n"
    "inline float kiln_fp8_scaled_round(float x, float scale, float scale_inv, int f) {\n"
    "  const float scaled = x * scale;\n"
    "  return kiln_fp8_to_f32(kiln_f32_to_fp8(scaled, f), f) * scale_inv;\n"
    "}\n\n";

}  // namespace kiln::ocl
