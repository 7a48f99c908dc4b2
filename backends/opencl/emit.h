// Shared machinery of the per-op code generators (codegen_*.cpp): operands
// before the arena is planned, a builder for one kernel's text, and the
// per-unit output the driver (codegen.cpp) deduplicates and places.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "codegen.h"
#include "fusion.h"

#pragma GCC visibility push(hidden)

namespace kiln::ocl {

// An operand before memory is planned: a graph value (plus an element
// offset into it), a unit-local temporary, or the error flag.
struct Operand {
  enum class Kind : uint8_t { Value, Temp, Flag };
  Kind kind = Kind::Value;
  uint32_t id = 0;     // value id, temp index, or check index (Flag)
  uint64_t extra = 0;  // elements past the value's start
};

inline Operand value(uint32_t id, uint64_t extra = 0) { return {Operand::Kind::Value, id, extra}; }

struct PendingStep {
  Step step;          // everything but args, which the driver resolves
  int32_t text = -1;  // kernel text index within the unit
  std::vector<Operand> operands;
};

struct UnitCode {
  std::vector<std::string> texts;  // kernel sources, named "KNAME"
  std::vector<PendingStep> steps;
  std::vector<uint64_t> temps;  // temporary sizes in elements
};

struct EmitContext {
  const ir::DecodedGraph& g;
  const std::vector<NodeInfo>& info;
  const Target& target;
  std::vector<std::string>& checks;
  UnitCode& unit;

  Operand temp(uint64_t elems) {
    unit.temps.push_back(elems);
    return {Operand::Kind::Temp, static_cast<uint32_t>(unit.temps.size() - 1), 0};
  }
  Operand check(std::string message) {
    checks.push_back(std::move(message));
    return {Operand::Kind::Flag, static_cast<uint32_t>(checks.size() - 1), 0};
  }
  const ir::DecodedValue& val(uint32_t id) const { return g.values[id]; }
};

// One kernel's text. Parameters come in (pointer, element offset) pairs; the
// prologue advances each pointer so the body indexes from 0. The flag is the
// exception: its "offset" is the check number a failing work item records.
class Kernel {
 public:
  // Returns the pointer's name. `type` is e.g. "float" or "const float".
  std::string param(const Operand& op, const std::string& type);
  // Returns a statement that records this check as failed.
  std::string flag_param(const Operand& check);
  void line(const std::string& s) {
    if (!s.empty()) body_ += "  " + s + "\n";
  }
  // `reqd_group`: the fixed work-group size, 0 for none.
  std::string text(uint64_t reqd_group) const;
  const std::vector<Operand>& operands() const { return operands_; }

 private:
  std::vector<Operand> operands_;
  std::string params_, prologue_, body_;
};

// Appends a 1-D launch of `k` over `global` work items (rounded up to a
// multiple of `local`; 0 lets the runtime choose).
void launch(EmitContext& ctx, const Kernel& k, int32_t node, uint64_t global, uint64_t local);

// The bounds check of a 1-D kernel over `count` items run in groups of
// `group`: nothing when the groups cover exactly `count` (PoCL vectorises
// work items far better without the early return; on a 2-core EPYC an
// unguarded bias+GELU kernel runs in half the time).
std::string guard(const std::string& index, uint64_t count, uint64_t group);

// Exact float literal ("0x1.8p+1f", "INFINITY", "NAN").
std::string flt(float v);
// The narrowest index type for indices below `limit`.
std::string idx(uint64_t limit);
std::string num(uint64_t v);
inline uint64_t round_up(uint64_t v, uint64_t m) { return m == 0 ? v : (v + m - 1) / m * m; }
// Largest power of two <= v (v >= 1).
uint64_t pow2_floor(uint64_t v);

// Float storage by dtype (codegen_dtype.cpp): f32 as float, bf16 as ushort,
// f16 as half (loads and stores only). Expressions are f32.
bool is_16bit(kiln_dtype dt);
// "float", "const ushort", ... for a kernel parameter of dtype `dt`.
std::string float_pointer_type(kiln_dtype dt, bool writable);
// ptr[index] widened to f32.
std::string load_float(kiln_dtype dt, const std::string& ptr, const std::string& index);
// The statement storing f32 `value` at ptr[index], rounded once.
std::string store_float(kiln_dtype dt, const std::string& ptr, const std::string& index, const std::string& value);
// f32 `value` rounded to `dt` (itself for f32): what a store then a load gives.
std::string round_float(kiln_dtype dt, const std::string& value);
// The conversion functions these expressions call.
extern const char* const kLowPrecisionPrelude;

// Stages a single-node unit that the generators wrote for f32: each 16-bit
// value it touches is widened into an f32 temporary before its steps and
// each 16-bit output rounded back from one after (codegen_staging.cpp).
void stage_16bit(EmitContext& ctx, uint32_t node);

// Per-op generators, and the ops each emits: every codegen_*.cpp lists the
// ops it lowers beside its generator; codegen.cpp routes a node to the one
// that lists its op, and together the lists are the plugin's support list.
extern const std::span<const kiln_op> kElementwiseOps;  // fused units
extern const std::span<const kiln_op> kMatmulOps;
extern const std::span<const kiln_op> kRowOps;
extern const std::span<const kiln_op> kReduceOps;
extern const std::span<const kiln_op> kLayoutOps;
extern const std::span<const kiln_op> kEmbeddingGradOps;
extern const std::span<const kiln_op> kRopeOps;
extern const std::span<const kiln_op> kAlibiOps;
void emit_elementwise(EmitContext& ctx, const Unit& unit, const std::vector<bool>& stored);
void emit_matmul(EmitContext& ctx, uint32_t node);  // kiln's kernel or CLBlast (codegen_matmul.cpp)
// kiln's GEMM kernel for a MATMUL node, 16-bit storage read and written
// natively (codegen_gemm.cpp).
void emit_kiln_gemm(EmitContext& ctx, uint32_t node);
// MATMUL's b [batch, n, k] transposed into an f32 temporary [batch, k, n]
// by one kernel that reads b as `dt`; returns the temporary.
Operand emit_transpose_b(EmitContext& ctx, uint32_t node, kiln_dtype dt);
void emit_rows(EmitContext& ctx, uint32_t node);    // layernorm(_grad), softmax(_grad), cross entropy(_grad)
void emit_reduce(EmitContext& ctx, uint32_t node);  // sum_to, sum_squares
void emit_layout(EmitContext& ctx, uint32_t node);  // permute, split, concat, reshape, embedding
void emit_embedding_grad(EmitContext& ctx, uint32_t node);
void emit_rope(EmitContext& ctx, uint32_t node);  // rope, rope_grad
// DROPOUT of `x` at work item `i` into a new float `y`, for emit_elementwise
// (codegen_dropout.cpp); `key` names its const int pointer.
std::vector<std::string> dropout_lines(const std::string& y, const std::string& x, const std::string& key,
                                       const std::string& i, const ir::DecodedNode& n, const NodeInfo& inf);
// A DROPOUT mask: the probability, the global index's period and stride
// (kiln_dropout_index) and the site as an OpenCL uint expression.
struct DropoutMask {
  double p = 0.0;
  uint64_t period = 1, stride = 1;
  std::string site;
};
// The site of DROPOUT_KEYED and ATTENTION_DROPOUT: the key's word 4.
std::string keyed_site(const std::string& key);
// One block that sets the existing float `f` to the mask's keep factor
// (0 or 1 / (1 - p)) of element `e`, an expression taken as ulong; `key`
// names the const int pointer to the key (seed, step, offset_lo, offset_hi).
std::vector<std::string> dropout_factor_lines(const std::string& f, const std::string& e, const std::string& key,
                                              const DropoutMask& mask);
void emit_alibi(EmitContext& ctx, uint32_t node);
extern const std::span<const kiln_op> kCastOps;
void emit_cast(EmitContext& ctx, uint32_t node);  // one elementwise kernel
extern const std::span<const kiln_op> kFp8Ops;
void emit_cast_fp8(EmitContext& ctx, uint32_t node);  // amax partials, scale, cast (codegen_fp8.cpp)
extern const std::span<const kiln_op> kAttentionOps;
// attention(_dropout), attention(_dropout)_grad (codegen_attention.cpp)
void emit_attention(EmitContext& ctx, uint32_t node);
// kiln/fp8.h's functions in OpenCL C, which CAST_FP8's kernels call.
extern const char* const kFp8Prelude;

// Column sums shared by sum_to and layernorm_grad: out_i[c] = sum over rows
// r of expr_i(r, c), in a fixed order (chunks of rows, then the chunks).
// `exprs` are OpenCL expressions in `r` and `c` over the pointers named by
// `inputs` (in order, as p0, p1, ...).
void emit_column_sums(EmitContext& ctx, int32_t node, int64_t rows, int64_t cols,
                      const std::vector<std::pair<Operand, std::string>>& inputs, const std::vector<std::string>& exprs,
                      const std::vector<Operand>& outputs);

// dst[0] = sum of src[0..count) (of squares if `square`), divided by
// `divisor` unless it is 1: one work item, compensated, in index order.
void emit_serial_sum(EmitContext& ctx, int32_t node, const Operand& src, uint64_t count, bool square,
                     const Operand& dst, uint64_t divisor);

// A contiguous copy of `bytes`.
void emit_copy(EmitContext& ctx, int32_t node, const Operand& src, const Operand& dst, uint64_t bytes);

// Compensated (Kahan) summation lines for accumulator `s`: declare, add.
// A non-finite partial sum stops compensation so inf and NaN propagate as
// in a plain sum instead of turning into NaN through inf - inf.
std::string kahan_declare(const std::string& s);
std::string kahan_add(const std::string& s, const std::string& expr);

}  // namespace kiln::ocl

#pragma GCC visibility pop
