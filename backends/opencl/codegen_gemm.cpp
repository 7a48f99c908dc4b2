// kiln's GEMM kernel: C = op(A) op(B) for a MATMUL node (batched,
// row-major, trans_a / trans_b), f32 accumulation, bf16/f16 storage read
// and written natively (C rounded once from the f32 sum). Its program is
// the unit's, so `kiln precompile` stores it built, work-group builds
// included; CLBlast's GEMMs build in-process at their first call instead
// (gemm_choice.h says which shapes run here).
//
// PoCL runs a work item as straight-line vector code, so each work item
// computes a register tile with explicit vectors of W floats (the device's
// preferred width), in one of two forms:
// - outer product (B contiguous along n): per k, V vectors of B's row k
//   and R broadcast scalars of A's column k (either layout) feed R * V
//   vector multiply-adds, a CPU BLAS micro-kernel. With trans_b and a
//   short K, one kernel first copies B transposed (widened to f32) into a
//   temporary.
// - dot product (trans_b, A not transposed, K >= kDotMinK: both operands
//   contiguous along k): an R x V tile of outputs, each a vector of W
//   partial sums over k, folded in a fixed tree after the loop.
// Tiles at a ragged edge clamp their loads into the matrix (a last column
// vector shifts left to end at column n, rows past m re-read row m - 1) and
// store only their own elements, so the inner loops have no branch. Every
// sum runs in a fixed order: the same bits on every run.
#include <algorithm>
#include <string>
#include <vector>

#include "emit.h"

namespace kiln::ocl {
namespace {

// Work items per work group. PoCL runs a group's items as a loop on one
// thread; a few items per group keep the scheduling rounds few without
// starving the second core of groups.
constexpr uint64_t kGroup = 4;

// With trans_b (and A not transposed), from this K on the dot-product form
// runs instead of transposing B first: its fold of W lanes per output is
// paid for by then. Measured on PoCL, AVX-512, load 3, GFLOP/s dot against
// transposing: a tie at K = 64 (64 x 192 x 64: 25.4 / 23.1; 64 x 512 x 64:
// 41.8 / 43.8), 80.6 / 36.0 at 256 x 3072 x 768, and 7.1 / 7.9 for
// attention's K = 16, where the fold is as long as the sum.
constexpr uint64_t kDotMinK = 64;

// The bytes of A a group of work items shares (group_order): an L2's worth
// on current x86 server cores. Smaller panels sweep B more often (256 KiB:
// the 256-token LM head 14% slower).
constexpr uint64_t kPanelBytes = 1024 * 1024;

struct Tile {
  uint64_t rows;     // R: output rows per work item
  uint64_t vectors;  // V: vectors of B per step of k (outer form: along a
                     // row of B; dot form: one per output column, along k)
  uint64_t width;    // W: floats per vector
};

// The accumulators (R * V vectors) plus the operands of one step must stay
// in registers: 32 vector registers on AVX-512 (W = 16), 16 on AVX2 (W = 8).
Tile outer_tile(const Target& t, uint64_t m, uint64_t n) {
  Tile tile{};
  tile.width = std::min(pow2_floor(std::max<uint64_t>(t.float_vector, 1)), pow2_floor(n));
  tile.vectors = std::min<uint64_t>(2, (n + tile.width - 1) / tile.width);
  tile.rows = std::min<uint64_t>(t.float_vector >= 16 ? 8 : 6, m);
  return tile;
}

Tile dot_tile(const Target& t, uint64_t m, uint64_t n, uint64_t k) {
  Tile tile{};
  tile.width = std::min(pow2_floor(std::max<uint64_t>(t.float_vector, 1)), pow2_floor(k));
  const uint64_t side = t.float_vector >= 16 ? 4 : 3;
  tile.vectors = std::min(side, n);
  tile.rows = std::min(side, m);
  return tile;
}

std::string vec_type(uint64_t w) { return w == 1 ? "float" : "float" + std::to_string(w); }

// Statement helpers (a line each, built outside the generators' loops).
std::string declare(const std::string& type, const std::string& name, const std::string& value) {
  return "const " + type + " " + name + " = " + value + ";";
}
std::string zeroed(const std::string& type, const std::string& name) {
  return type + " " + name + " = (" + type + ")(0.0f);";
}
std::string fma_into(const std::string& acc, const std::string& a, const std::string& b) {
  return acc + " = fma(" + a + ", " + b + ", " + acc + ");";
}
// "(float16)(x)": x in every lane.
std::string splat(const std::string& type, const std::string& x) { return "(" + type + ")(" + x + ")"; }
std::string halves_sum(const std::string& v) { return v + ".lo + " + v + ".hi"; }
std::string only_if(const std::string& cond, const std::string& statement) {
  return cond.empty() ? statement : "if (" + cond + ") " + statement;
}

// ptr[index .. index + w) widened to a vector of f32.
std::string load_vector(kiln_dtype dt, uint64_t w, const std::string& ptr, const std::string& index) {
  if (w == 1) return load_float(dt, ptr, index);
  const std::string W = std::to_string(w), at = "0, " + ptr + " + (" + index + ")";
  if (dt == KILN_BF16) return "as_float" + W + "(convert_uint" + W + "(vload" + W + "(" + at + ")) << 16)";
  if (dt == KILN_F16) return "vload_half" + W + "(" + at + ")";
  return "vload" + W + "(" + at + ")";
}

// bf16 bits of the f32 vector `v` (W lanes), rounded as kiln_f32_bf16 does
// lane by lane (to nearest even; a NaN made quiet), in vector operations:
// a per-lane call would be inlined W times and slow PoCL's build.
std::string bf16_vector(uint64_t w, const std::string& v) {
  const std::string W = std::to_string(w), u = "as_uint" + W + "(" + v + ")";
  return "select(convert_ushort" + W + "((" + u + " + 0x7FFFu + ((" + u + " >> 16) & 1u)) >> 16), convert_ushort" + W +
         "((" + u + " >> 16) | 0x40u), convert_short" + W + "((" + u + " & 0x7FFFFFFFu) > 0x7F800000u))";
}

// Stores vector `v` at ptr[index .. index + w), each lane rounded once.
// Whole unless `first` is set: then `v` holds the columns from `first` on,
// and only lanes at or past column `own` (the tile's own start) are
// stored, by a loop over a private copy (W unrolled masked stores made
// f16 kernels build 5x slower on PoCL).
std::string store_vector(kiln_dtype dt, uint64_t w, const std::string& ptr, const std::string& index,
                         const std::string& v, const std::string& first, const std::string& own) {
  const std::string W = std::to_string(w);
  if (w == 1) return only_if(first.empty() ? "" : first + " >= " + own, store_float(dt, ptr, index, v));
  if (!first.empty())
    return "{ float lanes[" + W + "]; vstore" + W + "(" + v + ", 0, lanes); for (uint l = " + own + " - " + first +
           "; l < " + W + "u; ++l) " + store_float(dt, ptr, index + " + l", "lanes[l]") + " }";
  const std::string at = "0, " + ptr + " + (" + index + ")";
  if (dt == KILN_BF16) return "vstore" + W + "(" + bf16_vector(w, v) + ", " + at + ");";
  if (dt == KILN_F16) return "vstore_half" + W + "_rte(" + v + ", " + at + ");";
  return "vstore" + W + "(" + v + ", " + at + ");";
}

struct Shape {
  uint64_t batch, m, n, k;
  bool trans_a;
  kiln_dtype a, b, c;  // storage of A, of B as the kernel reads it, of C
};

std::string v_name(const std::string& what, uint64_t i, uint64_t j) {
  return what + std::to_string(i) + "_" + std::to_string(j);
}

// "const I name = base + offset;", clamped to `last` when a tile may reach
// past it.
std::string clamped(const std::string& I, const std::string& name, const std::string& base, uint64_t offset,
                    uint64_t last, bool edge) {
  const std::string v = base + " + " + num(offset);
  return "const " + I + " " + name + " = " + (edge ? "min(" + v + ", (" + I + ")" + num(last) + ")" : v) + ";";
}

// The tile of work item g within its batch entry (t = g mod the tiles of
// one entry): items in groups of G row tiles (A's rows r0 .. r0 + G R,
// about kPanelBytes of A), rows fastest within a group, then columns.
// Items that run one after another on a thread share their tile of B, and
// a group sweeps B once while its panel of A stays in cache. Sweeping all
// of A per column tile (or all of B per row tile) reads it from memory
// every time once it outgrows the cache: the 8192-token LM head (A 25 MB)
// ran at 49 GFLOP/s so, 185 in groups.
void group_order(Kernel& k, const Shape& s, const std::string& I, uint64_t rows, uint64_t cols) {
  const uint64_t row_tiles = (s.m + rows - 1) / rows, col_tiles = (s.n + cols - 1) / cols;
  const uint64_t group = std::clamp<uint64_t>(kPanelBytes / std::max<uint64_t>(rows * s.k * 4, 1), 1, row_tiles);
  k.line("const " + I + " t = " + (s.batch == 1 ? "g" : "g % " + num(row_tiles * col_tiles)) + ";");
  k.line("const " + I + " first = t / " + num(group * col_tiles) + " * " + num(group) + ";");
  // Only a last, partial group has fewer than `group` row tiles.
  k.line("const " + I + " size = " +
         (row_tiles % group == 0 ? num(group)
                                 : "min((" + I + ")" + num(row_tiles) + " - first, (" + I + ")" + num(group) + ")") +
         ";");
  k.line("const " + I + " w = t % " + num(group * col_tiles) + ";");
  k.line("const " + I + " r0 = (first + w % size) * " + num(rows) + ", c0 = w / size * " + num(cols) + ";");
}

// The work item's tile, g -> (batch entry bi, first row r0, first column
// c0), and the pointers advanced to its batch entry.
void tile_origin(Kernel& k, const Shape& s, const std::string& I, uint64_t rows, uint64_t cols, const std::string& pa,
                 const std::string& pb, const std::string& pc) {
  const uint64_t row_tiles = (s.m + rows - 1) / rows, col_tiles = (s.n + cols - 1) / cols;
  const uint64_t items = s.batch * row_tiles * col_tiles;
  k.line("const " + I + " g = get_global_id(0);");
  k.line(guard("g", items, kGroup));
  group_order(k, s, I, rows, cols);
  if (s.batch == 1) return;
  k.line("const " + I + " bi = g / " + num(col_tiles * row_tiles) + ";");
  k.line(pa + " += bi * " + num(s.m * s.k) + ";");
  k.line(pb + " += bi * " + num(s.k * s.n) + ";");
  k.line(pc + " += bi * " + num(s.m * s.n) + ";");
}

std::string index_type(const Shape& s) {
  return idx(std::max({s.batch * s.m * s.k, s.batch * s.k * s.n, s.batch * s.m * s.n}) + 1);
}

// The outer-product form, B [k, n] contiguous along n: per k, V vectors of
// B's row k and R broadcast scalars of A's column k.
void outer_body(Kernel& k, const Shape& s, const Tile& t, const std::string& pa, const std::string& pb,
                const std::string& pc) {
  const uint64_t span = t.vectors * t.width;
  const bool row_edge = s.m % t.rows != 0, col_edge = s.n % span != 0;
  const std::string I = index_type(s), F = vec_type(t.width);
  tile_origin(k, s, I, t.rows, span, pa, pb, pc);
  for (uint64_t v = 0; v < t.vectors; ++v)
    k.line(clamped(I, "c_" + std::to_string(v), "c0", v * t.width, s.n - t.width, col_edge));
  for (uint64_t i = 0; i < t.rows; ++i) k.line(clamped(I, "r_" + std::to_string(i), "r0", i, s.m - 1, row_edge));
  for (uint64_t i = 0; i < t.rows; ++i)
    for (uint64_t v = 0; v < t.vectors; ++v) k.line(zeroed(F, v_name("acc", i, v)));
  k.line("for (" + I + " k = 0; k < " + num(s.k) + "; ++k) {");
  for (uint64_t v = 0; v < t.vectors; ++v)
    k.line("  " + declare(F, "bv" + std::to_string(v),
                          load_vector(s.b, t.width, pb, "k * " + num(s.n) + " + c_" + std::to_string(v))));
  for (uint64_t i = 0; i < t.rows; ++i) {
    const std::string r = "r_" + std::to_string(i);
    const std::string a =
        load_float(s.a, pa, s.trans_a ? "k * " + num(s.m) + " + " + r : r + " * " + num(s.k) + " + k");
    k.line("  " + declare(F, "av" + std::to_string(i), splat(F, a)));
    for (uint64_t v = 0; v < t.vectors; ++v)
      k.line("  " + fma_into(v_name("acc", i, v), "av" + std::to_string(i), "bv" + std::to_string(v)));
  }
  k.line("}");
  for (uint64_t i = 0; i < t.rows; ++i) {
    const std::string row = "(r0 + " + num(i) + ") * " + num(s.n) + " + c_";
    if (row_edge) k.line("if (r0 + " + num(i) + " < " + num(s.m) + ") {");
    for (uint64_t v = 0; v < t.vectors; ++v) {
      const std::string cv = "c_" + std::to_string(v);
      // A shifted last vector stores only the columns from its own start.
      const std::string first = col_edge ? cv : "", own = "c0 + " + num(v * t.width);
      k.line((row_edge ? "  " : "") +
             store_vector(s.c, t.width, pc, row + std::to_string(v), v_name("acc", i, v), first, own));
    }
    if (row_edge) k.line("}");
  }
}

// The dot-product form, A [m, k] and B [n, k] both contiguous along k: an
// R x C tile of outputs, each a vector of W partial sums over k (lane l
// sums the k = l mod W), folded in a fixed tree after the loop; the K % W
// last terms follow in order.
void dot_body(Kernel& k, const Shape& s, const Tile& t, const std::string& pa, const std::string& pb,
              const std::string& pc) {
  const uint64_t cols = t.vectors, w = t.width, whole = s.k - s.k % w;
  const bool row_edge = s.m % t.rows != 0, col_edge = s.n % cols != 0;
  const std::string I = index_type(s), F = vec_type(w);
  tile_origin(k, s, I, t.rows, cols, pa, pb, pc);
  for (uint64_t j = 0; j < cols; ++j) k.line(clamped(I, "c_" + std::to_string(j), "c0", j, s.n - 1, col_edge));
  for (uint64_t i = 0; i < t.rows; ++i) k.line(clamped(I, "r_" + std::to_string(i), "r0", i, s.m - 1, row_edge));
  for (uint64_t i = 0; i < t.rows; ++i)
    for (uint64_t j = 0; j < cols; ++j) k.line(zeroed(F, v_name("acc", i, j)));
  auto loop = [&](const std::string& type, const std::string& step, const std::string& from, uint64_t to, bool vec) {
    k.line("for (" + I + " k = " + from + "; k < " + num(to) + "; k += " + step + ") {");
    for (uint64_t j = 0; j < cols; ++j) {
      const std::string at = "c_" + std::to_string(j) + " * " + num(s.k) + " + k";
      k.line("  " +
             declare(type, "bv" + std::to_string(j), vec ? load_vector(s.b, w, pb, at) : load_float(s.b, pb, at)));
    }
    for (uint64_t i = 0; i < t.rows; ++i) {
      const std::string at = "r_" + std::to_string(i) + " * " + num(s.k) + " + k";
      k.line("  " +
             declare(type, "av" + std::to_string(i), vec ? load_vector(s.a, w, pa, at) : load_float(s.a, pa, at)));
      for (uint64_t j = 0; j < cols; ++j)
        k.line("  " + fma_into(v_name(vec ? "acc" : "sum", i, j), "av" + std::to_string(i), "bv" + std::to_string(j)));
    }
    k.line("}");
  };
  if (whole > 0) loop(F, num(w), "0", whole, true);
  for (uint64_t i = 0; i < t.rows; ++i)
    for (uint64_t j = 0; j < cols; ++j) {
      // Halves added pairwise down to one lane.
      std::string v = v_name("acc", i, j);
      for (uint64_t h = w / 2; h >= 1; h /= 2) {
        const std::string next = v_name("h" + std::to_string(h) + "_", i, j);
        k.line(declare(vec_type(h), next, halves_sum(v)));
        v = next;
      }
      k.line("float " + v_name("sum", i, j) + " = " + v + ";");
    }
  if (whole < s.k) loop("float", "1", num(whole), s.k, false);
  for (uint64_t i = 0; i < t.rows; ++i)
    for (uint64_t j = 0; j < cols; ++j) {
      const std::string st =
          store_float(s.c, pc, "(r0 + " + num(i) + ") * " + num(s.n) + " + c0 + " + num(j), v_name("sum", i, j));
      std::string cond;
      if (row_edge) cond = "r0 + " + num(i) + " < " + num(s.m);
      if (col_edge) cond += (cond.empty() ? "" : " && ") + std::string("c0 + ") + num(j) + " < " + num(s.n);
      k.line(only_if(cond, st));
    }
}

}  // namespace

void emit_kiln_gemm(EmitContext& ctx, uint32_t node) {
  const ir::DecodedNode& n = ctx.g.nodes[node];
  const NodeInfo& inf = ctx.info[node];
  Shape s{static_cast<uint64_t>(inf.batch),
          static_cast<uint64_t>(inf.m),
          static_cast<uint64_t>(inf.n),
          static_cast<uint64_t>(inf.k),
          inf.trans_a,
          ctx.val(n.inputs[0]).dtype,
          ctx.val(n.inputs[1]).dtype,
          ctx.val(n.outputs[0]).dtype};
  if (s.batch * s.m * s.n == 0) return;  // no output element
  const bool dot = inf.trans_b && !inf.trans_a && s.k >= kDotMinK;
  Operand b = value(n.inputs[1]);
  if (inf.trans_b && !dot) {
    b = emit_transpose_b(ctx, node, s.b);
    s.b = KILN_F32;
  }
  const Tile t = dot ? dot_tile(ctx.target, s.m, s.n, s.k) : outer_tile(ctx.target, s.m, s.n);
  Kernel k;
  const std::string pa = k.param(value(n.inputs[0]), float_pointer_type(s.a, false));
  const std::string pb = k.param(b, float_pointer_type(s.b, false));
  const std::string pc = k.param(value(n.outputs[0]), float_pointer_type(s.c, true));
  if (dot)
    dot_body(k, s, t, pa, pb, pc);
  else
    outer_body(k, s, t, pa, pb, pc);
  const uint64_t cols = dot ? t.vectors : t.vectors * t.width;
  const uint64_t items = s.batch * ((s.m + t.rows - 1) / t.rows) * ((s.n + cols - 1) / cols);
  launch(ctx, k, static_cast<int32_t>(node), items, kGroup);
}

}  // namespace kiln::ocl
