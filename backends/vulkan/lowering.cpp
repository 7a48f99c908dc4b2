#include "lowering.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>

#include "attention_plan.h"
#include "cast_folding.h"
#include "fusion.h"
#include "gemm_choice.h"
#include "kiln/philox.h"

namespace kiln::vk {

namespace {

constexpr uint32_t kGroup = 256;  // invocations per workgroup of the 1-D kernels

uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }
uint32_t u32(uint64_t v, const char* what) {
  if (v > 0xFFFFFFFFull) fail(KILN_ERR_UNSUPPORTED, std::string("vulkan: ") + what + " exceeds 32 bits");
  return static_cast<uint32_t>(v);
}
uint32_t fbits(float f) { return std::bit_cast<uint32_t>(f); }

class Lowerer {
 public:
  Lowerer(const ir::DecodedGraph& g, const DeviceInfo& d) : g_(g), d_(d) {
    limit_ = binding_window_limit(d);
    if (limit_ < 256) fail(KILN_ERR_UNSUPPORTED, "vulkan: maxStorageBufferRange is too small");
    const bool big_tiles = d.max_invocations >= 256 && d.max_shared_bytes >= 8192;
    group_ = d.max_invocations >= 256 ? 256 : 128;
    gemm_tile_ = big_tiles ? 64 : 32;
    // Which GEMM shader runs is gemm_choice.h's, per product;
    // KILN_VULKAN_GEMM overrides it (tests, benches).
    // KILN_VULKAN_STAGE16=1 lowers bf16/f16 the older way, every node
    // staged through convert16 (tests compare both; docs/VULKAN.md's
    // before/after figures).
    stage16_ = kiln::plugin_kit::env_flag("KILN_VULKAN_STAGE16");
    gemm_device_ = gemm_device(d);
    gemm_override_ = gemm_override();
  }

  Schedule finish(const std::vector<uint64_t>& slot_bytes) {
    if (!staged_nodes_.empty()) note_staging();
    s_.num_slots = static_cast<uint32_t>(slot_bytes.size());
    s_.slot_bytes = slot_bytes;
    place_barriers();
    return std::move(s_);
  }

  void node(size_t index, const ir::DecodedNode& n, const NodeInfo& p);
  // One fused.comp dispatch for chain `c` (fusion.h); false, emitting
  // nothing, where its values' dtypes need what fused.comp cannot do.
  bool chain(const ElementwiseChain& c, const std::vector<NodeInfo>& info);
  // Whether chains are fused: not with KILN_VULKAN_FUSE=0 (tests compare
  // both; docs/VULKAN.md's dispatch counts), nor on the staged 16-bit path.
  // Widening CASTs whose MATMUL readers load the 16-bit source instead
  // (cast_folding.h): not on the staged path, whose nodes read f32 copies.
  bool folds_casts() const { return !stage16_; }
  void fold(std::vector<int64_t> source_of) { source_of_ = std::move(source_of); }
  bool fuses() const {
    const char* env = std::getenv("KILN_VULKAN_FUSE");
    return !stage16_ && !(env != nullptr && std::strcmp(env, "0") == 0);
  }
  uint64_t window_limit() const { return limit_; }

  // One line per process the first time a graph stages 16-bit values, so a
  // slow 16-bit run says why; native graphs print nothing.
  void note_staging() const {
    static std::atomic<bool> said{false};
    if (said.exchange(true)) return;
    std::string ops;
    for (int32_t i : staged_nodes_) {
      const std::string name = kiln_op_name(g_.nodes[static_cast<size_t>(i)].op);
      if (ops.find(name) == std::string::npos) ops += (ops.empty() ? "" : ", ") + name;
    }
    std::fprintf(stderr,
                 "kiln: vulkan: %zu nodes (%s) stage their bf16/f16 values through f32 copies (convert16): %s\n",
                 staged_nodes_.size(), ops.c_str(),
                 stage16_ ? "KILN_VULKAN_STAGE16 is set"
                          : "their kernels would accumulate into a 16-bit output across chunked dispatches");
  }

 private:
  // An operand as the node's kernels see it: where, and its dtype code in
  // io.glsl (kDtypeF32 also for i32 and for f32 copies of staged values).
  struct Val {
    Ref ref;
    uint32_t dt = kDtypeF32;
    uint64_t es() const { return dt == kDtypeF32 ? 4 : 2; }  // bytes per element
  };
  Val val(uint32_t value) const {
    if (value < source_of_.size() && source_of_[value] >= 0) value = static_cast<uint32_t>(source_of_[value]);
    return Val{at(value), code(value)};
  }
  static Val f32(Ref r) { return Val{r, kDtypeF32}; }
  // The dtype code of a value read or written in place: 16-bit unless the
  // node stages it (staged_ holds its f32 copy).
  uint32_t code(uint32_t value) const {
    for (const Staged& s : staged_)
      if (s.id == value) return kDtypeF32;
    const kiln_dtype dt = g_.values[value].dtype;
    return dt == KILN_BF16 ? kDtypeBF16 : dt == KILN_F16 ? kDtypeF16 : kDtypeF32;
  }
  static uint32_t pack(std::initializer_list<uint32_t> codes) {
    uint32_t bits = 0, k = 0;
    for (uint32_t c : codes) bits |= c << (2 * k++);
    return bits;
  }
  // A kernel that would accumulate into a 16-bit output across dispatches
  // (K chunks of a GEMM, row chunks of a column sum) would round each
  // partial sum: it asks node() to stage the node instead (f32 partials,
  // one rounding at the end, as the reference).
  bool accumulates16(const Val& out, bool accumulating) {
    if (accumulating && out.dt != kDtypeF32) restage_ = true;
    return restage_;
  }

  // A bf16/f16 value of the node being lowered and its f32 copy in scratch.
  struct Staged {
    uint32_t id = 0;
    Ref copy;
    bool output = false;
  };
  void lower_op(size_t index, const ir::DecodedNode& n, const NodeInfo& p);
  void stage_in(const ir::DecodedNode& n);
  void stage_out();
  void convert16(uint32_t mode, uint32_t value, Ref f32_copy);

  // Where the node's kernels find a value: its f32 copy in scratch while the
  // node is staged (bf16/f16 storage), else its own memory.
  Ref at(uint32_t value) const {
    for (const Staged& s : staged_)
      if (s.id == value) return s.copy;
    return own(value);
  }
  Ref own(uint32_t value) const {
    const ir::DecodedValue& v = g_.values[value];
    return Ref{Mem::Slot, v.slot, v.offset};
  }
  static Ref plus(Ref r, uint64_t bytes) {
    r.offset += bytes;
    return r;
  }
  Ref scratch(uint64_t bytes) {
    Ref r{Mem::Scratch, 0, scratch_used_};
    scratch_used_ += (bytes + 63) / 64 * 64;
    s_.scratch_bytes = std::max(s_.scratch_bytes, scratch_used_);
    return r;
  }
  uint32_t check(const std::string& message) {
    s_.checks.push_back(message);
    return static_cast<uint32_t>(s_.checks.size() - 1);
  }
  // A pipeline of `shader`; with 16-bit bindings (dtypes, pack()) of its
  // "<shader>16" build (io.glsl).
  uint32_t pipeline(const std::string& name, std::vector<uint32_t> spec, uint32_t dtypes = 0) {
    const std::string shader = dtypes != 0 ? name + "16" : name;
    auto it = std::find(s_.shaders.begin(), s_.shaders.end(), shader);
    const auto si = static_cast<uint32_t>(it - s_.shaders.begin());
    if (it == s_.shaders.end()) s_.shaders.push_back(shader);
    for (size_t i = 0; i < s_.pipelines.size(); ++i)
      if (s_.pipelines[i].shader == si && s_.pipelines[i].spec == spec && s_.pipelines[i].dtypes == dtypes)
        return static_cast<uint32_t>(i);
    s_.pipelines.push_back(Pipeline{si, std::move(spec), dtypes});
    return static_cast<uint32_t>(s_.pipelines.size() - 1);
  }
  Binding window(Ref r, uint64_t bytes, bool writes) const {
    if (bytes > limit_)
      fail(KILN_ERR_UNSUPPORTED, "node " + std::to_string(node_) + ": a " + std::to_string(bytes) +
                                     "-byte operand cannot be split below the device's storage-buffer range");
    return Binding{r, bytes, writes};
  }
  void emit(uint32_t pipe, std::vector<Binding> bindings, const std::vector<uint32_t>& args, uint32_t gx,
            uint32_t gy = 1, uint32_t gz = 1) {
    Dispatch d;
    d.pipeline = pipe;
    d.node = node_;
    d.groups[0] = gx;
    d.groups[1] = gy;
    d.groups[2] = gz;
    d.push.assign(bindings.size(), 0);
    d.push.insert(d.push.end(), args.begin(), args.end());
    d.bindings = std::move(bindings);
    s_.dispatches.push_back(std::move(d));
  }
  // count invocations of a 1-D kernel, as a 2-D grid of workgroups.
  void emit_1d(uint32_t pipe, std::vector<Binding> bindings, const std::vector<uint32_t>& args, uint64_t count,
               uint32_t group = 0) {
    if (group == 0) group = group_;
    const uint64_t groups = std::max<uint64_t>(1, ceil_div(count, group));
    const uint64_t gx = std::min<uint64_t>(groups, d_.max_groups[0]);
    const uint64_t gy = ceil_div(groups, gx);
    if (gy > d_.max_groups[1]) fail(KILN_ERR_UNSUPPORTED, "vulkan: too many workgroups");
    emit(pipe, std::move(bindings), args, static_cast<uint32_t>(gx), static_cast<uint32_t>(gy));
  }

  // The largest number of elements (a multiple of `multiple`) one window holds.
  uint64_t chunk_elems(uint64_t multiple = 1) const {
    const uint64_t n = std::min<uint64_t>(limit_ / 4, uint64_t{1} << 31) / multiple * multiple;
    if (n == 0) fail(KILN_ERR_UNSUPPORTED, "node " + std::to_string(node_) + ": a broadcast operand is too large");
    return n;
  }

  // One operand of a row-wise op: a window of `row_bytes` per row, or the
  // whole `bytes` when row_bytes is 0 (e.g. gamma, a flag).
  struct Operand {
    Ref ref;
    uint64_t row_bytes = 0;
    uint64_t bytes = 0;
    bool writes = false;
  };
  using ArgsFn = std::function<std::vector<uint32_t>(uint64_t r0, uint64_t nr)>;
  // Splits `rows` into chunks whose row windows fit; per chunk one dispatch
  // of one workgroup per row (per_row) or of `invocations` invocations of a
  // 1-D kernel.
  void rows_op(uint32_t pipe, uint64_t rows, const std::vector<Operand>& ops, const ArgsFn& args, bool per_row,
               uint64_t invocations = 0);
  // Workgroup size of a kernel with one workgroup per row of `cols`: a power
  // of two no wider than the row needs (big workgroups with barriers cost
  // much on CPU implementations such as lavapipe), 16 to group_.
  uint32_t row_group(uint64_t cols) const {
    uint32_t g = 16;
    while (g < group_ && g < cols) g *= 2;
    return g;
  }
  void emit_rows(uint32_t pipe, std::vector<Binding> bindings, const std::vector<uint32_t>& args, uint64_t rows);

  // `f2` (CLAMP's upper bound) is pushed only when given, so the other ops'
  // dispatches stay as they were.
  // `op` is the node's op code: elementwise.comp selects its branch by it.
  void elementwise(kiln_op op, uint32_t y, int64_t a, int64_t b, uint64_t count, uint64_t bcast, float f,
                   std::optional<float> f2 = std::nullopt);
  void column_sum(int mode, Val y, uint64_t cols, uint64_t rows, Val x, Val x2, Val stats, float scale);
  void embedding(size_t index, const ir::DecodedNode& n, const NodeInfo& p, bool grad);
  void cross_entropy(size_t index, const ir::DecodedNode& n, const NodeInfo& p, bool grad);
  void sum_squares(const ir::DecodedNode& n, const NodeInfo& p);
  void adamw(const ir::DecodedNode& n, const NodeInfo& p);
  void dropout(const ir::DecodedNode& n, const NodeInfo& p);
  void cast_fp8(const ir::DecodedNode& n, const NodeInfo& p);
  void copy2d(Val dst, Val src, uint64_t rows, uint64_t inner, uint64_t src_stride, uint64_t dst_stride);
  void matmul(const ir::DecodedNode& n, const NodeInfo& p);
  void attention(const ir::DecodedNode& n);
  bool split_k(const ir::DecodedNode& n, uint64_t M, uint64_t N, uint64_t K, bool ta, bool tb, uint32_t tile,
               uint32_t invocations, const std::function<uint32_t(uint32_t)>& gemm_pipeline);
  void permute(const ir::DecodedNode& n, const NodeInfo& p);
  void rope(const ir::DecodedNode& n, const NodeInfo& p);
  void place_barriers();

  const ir::DecodedGraph& g_;
  const DeviceInfo& d_;
  Schedule s_;
  uint64_t limit_ = 0;
  uint64_t scratch_used_ = 0;
  int32_t node_ = -1;
  uint32_t gemm_tile_ = 64;
  GemmDevice gemm_device_;
  GemmOverride gemm_override_ = GemmOverride::None;
  uint32_t group_ = kGroup;            // invocations per workgroup of the 1-D and row kernels
  std::vector<Staged> staged_;         // of the node being lowered
  bool stage16_ = false;               // KILN_VULKAN_STAGE16: stage every 16-bit node
  bool restage_ = false;               // the node being lowered natively must be staged
  std::vector<int32_t> staged_nodes_;  // nodes with convert16 dispatches
  std::vector<int64_t> source_of_;     // per value: what its readers load instead (cast_folding.h), or -1
};

// y = OP(a, b) elementwise over `count` elements, in chunks that fit a window.
// A broadcast b (bcast elements) is bound whole and chunks start at
// multiples of bcast so that i % bcast stays right.
void Lowerer::elementwise(kiln_op op, uint32_t y, int64_t a, int64_t b, uint64_t count, uint64_t bcast, float f,
                          std::optional<float> f2) {
  // An absent a stands in as y, an absent b as a.
  const Val vy = val(y), va = a >= 0 ? val(static_cast<uint32_t>(a)) : vy,
            vb = b >= 0 ? val(static_cast<uint32_t>(b)) : va;
  const uint32_t pipe = pipeline("elementwise", {group_, static_cast<uint32_t>(op)}, pack({vy.dt, va.dt, vb.dt}));
  // b as large as a is no broadcast: it is chunked like a.
  const bool broadcast = kiln_op_table[op].rule == KILN_RULE_BROADCAST && bcast < count;  // ADD, MUL, MAXIMUM
  const uint64_t chunk = chunk_elems(broadcast ? bcast : 1);
  for (uint64_t e0 = 0; e0 < count; e0 += chunk) {
    const uint64_t n = std::min(chunk, count - e0);
    Binding wy = window(plus(vy.ref, e0 * vy.es()), n * vy.es(), true);
    Binding wa = a >= 0 ? window(plus(va.ref, e0 * va.es()), n * va.es(), false) : Binding{wy.ref, wy.bytes};
    Binding wb = wa;
    wb.writes = false;
    if (b >= 0) {
      wb = broadcast ? window(vb.ref, bcast * vb.es(), false) : window(plus(vb.ref, e0 * vb.es()), n * vb.es(), false);
    }
    std::vector<uint32_t> args{u32(n, "count"), u32(broadcast ? bcast : n, "bcast"), fbits(f)};
    if (f2) args.push_back(fbits(*f2));
    emit_1d(pipe, {wy, wa, wb}, args, n);
  }
}

bool Lowerer::chain(const ElementwiseChain& c, const std::vector<NodeInfo>& info) {
  const ir::DecodedNode& last = g_.nodes[c.nodes.back()];
  node_ = static_cast<int32_t>(c.nodes.back());
  scratch_used_ = 0;
  staged_.clear();
  const uint64_t count = static_cast<uint64_t>(info[c.nodes.front()].count);
  const Val vy = val(last.outputs[0]);
  // Each intermediate rounded to its dtype as its store would; that takes
  // the 16-bit build, which a chain of f32 bindings does not get.
  uint32_t rnd = 0, dtypes = 0;
  for (size_t s = 0; s + 1 < c.nodes.size(); ++s) rnd |= code(g_.nodes[c.nodes[s]].outputs[0]) << (2 * s);
  std::vector<Binding> bindings{window(vy.ref, count * vy.es(), true)};
  std::vector<uint32_t> periods{u32(count, "count")};
  dtypes |= vy.dt;
  for (size_t k = 0; k < c.values.size(); ++k) {
    const Val v = val(c.values[k]);
    const uint64_t n = static_cast<uint64_t>(g_.values[c.values[k]].numel());
    bindings.push_back(window(v.ref, n * v.es(), c.written[k]));
    periods.push_back(u32(n, "count"));
    dtypes |= v.dt << (2 * (k + 1));
  }
  if (rnd != 0 && dtypes == 0) return false;
  // Unused bindings repeat the output's window, read-only: the layout has 8.
  while (bindings.size() < 8) {
    bindings.push_back(Binding{bindings[0].ref, bindings[0].bytes, false});
    periods.push_back(periods[0]);
    dtypes |= vy.dt << (2 * (bindings.size() - 1));
  }
  std::vector<uint32_t> spec{group_, static_cast<uint32_t>(c.nodes.size())};
  std::vector<uint32_t> fs(4, 0), f2s(4, 0);
  for (size_t s = 0; s < ElementwiseChain::kMaxStages; ++s)
    spec.push_back(s < c.nodes.size() ? static_cast<uint32_t>(g_.nodes[c.nodes[s]].op)
                                      : static_cast<uint32_t>(KILN_OP_FILL));
  for (size_t s = 0; s < ElementwiseChain::kMaxStages; ++s)
    spec.push_back(s < c.nodes.size() ? static_cast<uint32_t>(c.b_binding[s]) : 0u);
  spec.push_back(rnd);
  for (size_t s = 0; s + 1 < ElementwiseChain::kMaxStages; ++s)
    spec.push_back(s < c.store_binding.size() ? static_cast<uint32_t>(c.store_binding[s]) : 0u);
  for (size_t s = 0; s < c.nodes.size(); ++s) {
    const ir::DecodedNode& n = g_.nodes[c.nodes[s]];
    if (!n.fattrs.empty()) fs[s] = fbits(n.fattrs[0]);
    if (n.fattrs.size() > 1) f2s[s] = fbits(n.fattrs[1]);
  }
  const uint32_t pipe = pipeline("fused", spec, dtypes);
  std::vector<uint32_t> args{u32(count, "count")};
  args.insert(args.end(), periods.begin(), periods.end());
  args.insert(args.end(), fs.begin(), fs.end());
  args.insert(args.end(), f2s.begin(), f2s.end());
  args.push_back(0);  // fused.comp's opaque zero
  // Its dropout stage, as Lowerer::dropout pushes it for a dispatch at 0.
  std::vector<uint32_t> drop(5, 0);
  for (uint32_t index : c.nodes) {
    const ir::DecodedNode& n = g_.nodes[index];
    if (n.op != KILN_OP_DROPOUT_KEYED) continue;
    const uint64_t period = std::min(static_cast<uint64_t>(info[index].period), count);
    if (period >= (uint64_t{1} << 31)) return false;  // node() refuses it with its message
    const auto stride = static_cast<uint64_t>(info[index].stride);
    drop = {static_cast<uint32_t>(period), static_cast<uint32_t>(stride), static_cast<uint32_t>(stride >> 32),
            kiln_dropout_threshold(n.fattrs[0]), fbits(kiln_dropout_scale(n.fattrs[0]))};
  }
  args.insert(args.end(), drop.begin(), drop.end());
  emit_1d(pipe, std::move(bindings), args, count);
  return true;
}

// dst[r * dst_stride + i] = src[r * src_stride + i], chunked over rows.
// Between dtypes (a CAST) each element is converted (copy16.glsl).
void Lowerer::copy2d(Val dst, Val src, uint64_t rows, uint64_t inner, uint64_t src_stride, uint64_t dst_stride) {
  const uint32_t pipe = pipeline("copy2d", {group_}, pack({dst.dt, src.dt}));
  auto at_col = [](Val v, uint64_t col) { return Val{plus(v.ref, col * v.es()), v.dt}; };
  const uint64_t max_elems = chunk_elems();
  const uint64_t widest = std::max(src_stride, dst_stride);
  if (inner > max_elems) {
    // One row exceeds a window: copy it in column bands.
    for (uint64_t c0 = 0; c0 < inner; c0 += max_elems) {
      const uint64_t w = std::min(max_elems, inner - c0);
      if (rows == 1)
        copy2d(at_col(dst, c0), at_col(src, c0), w, 1, 1, 1);
      else
        copy2d(at_col(dst, c0), at_col(src, c0), rows, w, src_stride, dst_stride);
    }
    return;
  }
  uint64_t chunk = 1 + (max_elems - inner) / widest;
  chunk = std::min(chunk, (uint64_t{1} << 31) / inner);
  for (uint64_t r0 = 0; r0 < rows; r0 += chunk) {
    const uint64_t nr = std::min(chunk, rows - r0);
    Binding wd = window(plus(dst.ref, r0 * dst_stride * dst.es()), ((nr - 1) * dst_stride + inner) * dst.es(), true);
    Binding ws = window(plus(src.ref, r0 * src_stride * src.es()), ((nr - 1) * src_stride + inner) * src.es(), false);
    emit_1d(pipe, {wd, ws},
            {u32(nr * inner, "count"), u32(inner, "inner"), u32(src_stride, "stride"), u32(dst_stride, "stride")},
            nr * inner);
  }
}

void Lowerer::permute(const ir::DecodedNode& n, const NodeInfo& p) {
  const uint64_t count = static_cast<uint64_t>(p.count);
  const backend::PermutePlan& plan = p.permute;
  if (plan.rank <= 1) {  // nothing moves: a plain copy
    copy2d(val(n.outputs[0]), val(n.inputs[0]), count, 1, 1, 1);
    return;
  }
  const Val y = val(n.outputs[0]), x = val(n.inputs[0]);
  std::vector<uint32_t> args{u32(count, "count"), static_cast<uint32_t>(plan.rank)};
  for (int i = 0; i < 6; ++i) args.push_back(i < plan.rank ? u32(static_cast<uint64_t>(plan.out_dims[i]), "dim") : 1);
  for (int i = 0; i < 6; ++i)
    args.push_back(i < plan.rank ? u32(static_cast<uint64_t>(plan.in_strides[i]), "stride") : 0);
  emit_1d(pipeline(kiln_op_name(n.op), {group_}, pack({y.dt, x.dt})),
          {window(y.ref, count * y.es(), true), window(x.ref, count * x.es(), false)}, args, count);
}

// ROPE(_GRAD) (rope.comp), one invocation per element, in chunks of rows
// whose windows fit; the cos and sin tables are bound whole.
void Lowerer::rope(const ir::DecodedNode& n, const NodeInfo& p) {
  const uint64_t rows = static_cast<uint64_t>(p.rows), cols = static_cast<uint64_t>(p.cols),
                 positions = static_cast<uint64_t>(p.positions), pairs = static_cast<uint64_t>(p.pairs);
  const Val y = val(n.outputs[0]), x = val(n.inputs[0]), vc = val(n.inputs[1]), vs = val(n.inputs[2]);
  const uint32_t pipe =
      pipeline(kiln_op_name(KILN_OP_ROPE), {group_, p.interleaved ? 1u : 0u, n.op == KILN_OP_ROPE_GRAD ? 1u : 0u},
               pack({y.dt, x.dt, vc.dt, vs.dt}));
  const uint64_t chunk = chunk_elems(cols) / cols;
  for (uint64_t r0 = 0; r0 < rows; r0 += chunk) {
    const uint64_t nr = std::min(chunk, rows - r0);
    emit_1d(pipe,
            {window(plus(y.ref, r0 * cols * y.es()), nr * cols * y.es(), true),
             window(plus(x.ref, r0 * cols * x.es()), nr * cols * x.es(), false),
             window(vc.ref, positions * pairs * vc.es(), false), window(vs.ref, positions * pairs * vs.es(), false)},
            {u32(nr * cols, "count"), u32(cols, "cols"), u32(positions, "positions"), u32(pairs, "pairs"),
             u32(r0 % positions, "position")},
            nr * cols);
  }
}

// ATTENTION (one attention.comp dispatch, PASS 0) and ATTENTION_GRAD (PASS
// 1 for dq and each row's stats in scratch, then PASS 2 for dk and dv),
// matrices in chunks whose windows fit, as plan_attention() lays them out
// (attention_plan.h). ATTENTION_DROPOUT and its gradient are the same
// passes built with DROPOUT, the key bound last (q in its place otherwise).
void Lowerer::attention(const ir::DecodedNode& n) {
  const std::vector<int64_t>& dims = g_.values[n.inputs[0]].dims;
  const uint64_t T = static_cast<uint64_t>(dims[dims.size() - 2]), D = static_cast<uint64_t>(dims.back());
  const uint64_t mats = static_cast<uint64_t>(g_.values[n.inputs[0]].numel()) / std::max<uint64_t>(1, T * D);
  if (mats * T * D == 0) return;
  std::string why;
  const bool dropout = kiln_op_table[n.op].rule == KILN_RULE_ATTENTION_DROPOUT;
  const std::optional<AttentionPlan> plan = plan_attention(d_, T, D, dropout, &why);
  if (!plan) fail(KILN_ERR_UNSUPPORTED, "node " + std::to_string(node_) + ": " + why);
  const uint32_t E = plan->E, S = plan->S, QB = plan->QB, bk = plan->BK;
  const bool grad = n.op == KILN_OP_ATTENTION_GRAD || n.op == KILN_OP_ATTENTION_DROPOUT_GRAD;
  const Val q = val(n.inputs[0]), k = val(n.inputs[1]), v = val(n.inputs[2]);
  std::vector<uint32_t> mask(5, 0);  // period, stride (2 words), threshold, keep factor
  if (dropout) {
    // The probabilities' element index i * T + j within a matrix, and the
    // period, are 32-bit in the shader (as dropout.comp's period is).
    const auto period = static_cast<uint64_t>(n.iattrs[0]), stride = static_cast<uint64_t>(n.iattrs[1]);
    if (T * T >= (uint64_t{1} << 31) || period >= (uint64_t{1} << 31))
      fail(KILN_ERR_UNSUPPORTED, "node " + std::to_string(node_) + ": attention dropout over " + std::to_string(T) +
                                     " positions with period " + std::to_string(period) + " exceeds 2^31 - 1");
    const double prob = n.fattrs[1];
    mask = {static_cast<uint32_t>(period), static_cast<uint32_t>(stride), static_cast<uint32_t>(stride >> 32),
            kiln_dropout_threshold(prob), fbits(kiln_dropout_scale(prob))};
  }
  // Bindings a pass does not use get q (read only) in their place.
  const Val y = grad ? q : val(n.outputs[0]), dy = grad ? val(n.inputs[3]) : q;
  const Val dq = grad ? val(n.outputs[0]) : y, dk = grad ? val(n.outputs[1]) : y, dv = grad ? val(n.outputs[2]) : y;
  const Val stats = f32(grad ? scratch(mats * T * 8) : q.ref);
  const uint64_t per = std::max<uint64_t>(1, std::min<uint64_t>(limit_ / (T * D * 4), d_.max_groups[1]));
  const auto blocks = u32(ceil_div(T, QB), "query blocks");
  for (uint64_t z0 = 0; z0 < mats; z0 += per) {
    const uint64_t nz = std::min(per, mats - z0);
    auto w = [&](const Val& x, bool writes) {
      return window(plus(x.ref, z0 * T * D * x.es()), nz * T * D * x.es(), writes);
    };
    const Binding ws = grad ? window(plus(stats.ref, z0 * T * 8), nz * T * 8, true) : w(q, false);
    std::vector<uint32_t> args{u32(T, "T"), fbits(n.fattrs[0]), static_cast<uint32_t>(z0)};
    args.insert(args.end(), mask.begin(), mask.end());
    auto pass = [&](uint32_t which, const Val& out, const Val& aux, bool aux_writes, bool stats_write) {
      const std::vector<uint32_t> spec{u32(QB * S, "group"), which,       u32(D, "D"),   u32(bk, "BK"),
                                       u32(E, "E"),          u32(S, "S"), u32(QB, "QB"), dropout ? 1u : 0u};
      const uint32_t pipe =
          pipeline(kiln_op_name(KILN_OP_ATTENTION), spec, pack({out.dt, q.dt, k.dt, v.dt, aux.dt, dy.dt}));
      Binding wstats = ws;
      wstats.writes = stats_write;
      emit(pipe,
           {w(out, true), w(q, false), w(k, false), w(v, false), w(aux, aux_writes), w(dy, false), wstats,
            dropout ? window(at(n.inputs.back()), 20, false) : w(q, false)},
           args, blocks, static_cast<uint32_t>(nz));
    };
    if (!grad) {
      pass(0, y, q, false, false);
      continue;
    }
    pass(1, dq, q, false, true);
    pass(2, dk, dv, true, false);
  }
}

// C = op(A) @ op(B), batched. Each operand is stored as [batch][rows][cols]
// (A: rows m or k if transposed; B: rows k or n if transposed; C: rows m).
// When whole matrices do not fit a window, one matrix at a time is split
// along m, n and k so that every operand's window (a band of its stored
// rows) fits; k chunks after the first accumulate into C.
void Lowerer::matmul(const ir::DecodedNode& n, const NodeInfo& p) {
  const uint64_t batch = static_cast<uint64_t>(p.batch), M = static_cast<uint64_t>(p.m), N = static_cast<uint64_t>(p.n),
                 K = static_cast<uint64_t>(p.k);
  const bool ta = p.trans_a, tb = p.trans_b;
  const uint64_t lda = ta ? M : K, ldb = tb ? K : N, ldc = N;
  const uint64_t size_a = M * K, size_b = K * N, size_c = M * N;  // elements per matrix
  // gemm_choice.h picks the shader: on tensor cores, gemm_coopmat.comp's
  // 128x128 or 64x64 tiles for 16-bit operands; on a GPU, gemm_tiled.comp's 128x128
  // tiles (8x8 per invocation) where the product fills them. Otherwise
  // gemm.comp: 64x64 tiles (4x4 per invocation, 256 invocations) where the
  // product is big enough; 32x32 (64 invocations) below that.
  const Val A = val(n.inputs[0]), B = val(n.inputs[1]), C = val(n.outputs[0]);
  const GemmKernel kernel = choose_gemm(gemm_device_, {M, N, K, A.dt != kDtypeF32, B.dt != kDtypeF32}, gemm_override_);
  const bool tiled = kernel == GemmKernel::Tiled;
  const bool coopmat = is_coopmat(kernel);
  const CoopmatLayout layout = coopmat_layout(kernel);
  const uint32_t T = coopmat ? layout.tile : tiled ? 128 : (M >= 64 && N >= 64) ? gemm_tile_ : 32;
  const uint32_t invocations = coopmat ? layout.subgroups * kCoopmatSubgroupSize : tiled ? 256 : (T / 4) * (T / 4);
  // The chosen shader's pipeline writing a C of dtype c_dt.
  auto gemm_pipeline = [&](uint32_t c_dt) {
    const uint32_t dtypes = pack({c_dt, A.dt, B.dt});
    if (coopmat) return pipeline(gemm_kernel_name(kernel), {invocations, ta ? 1u : 0u, tb ? 1u : 0u}, dtypes);
    if (tiled) return pipeline("gemm_tiled", {invocations, ta ? 1u : 0u, tb ? 1u : 0u}, dtypes);
    return pipeline("gemm", {invocations, T, T, 16, 4, 4, ta ? 1u : 0u, tb ? 1u : 0u}, dtypes);
  };
  const uint64_t max_elems = limit_ / 4;

  auto band = [](Val base, uint64_t matrix, uint64_t z0, uint64_t nz, uint64_t r0, uint64_t nr, uint64_t ld,
                 uint64_t c0, uint64_t nc) {
    // Window over matrices [z0, z0+nz), stored rows [r0, r0+nr), cols [c0, c0+nc).
    Ref r = plus(base.ref, (z0 * matrix + r0 * ld + c0) * base.es());
    return std::pair<Ref, uint64_t>{r, ((nz - 1) * matrix + (nr - 1) * ld + nc) * base.es()};
  };
  const uint64_t largest = std::max({size_a, size_b, size_c});
  if ((tiled || coopmat) && batch == 1 && largest <= max_elems &&
      split_k(n, M, N, K, ta, tb, T, invocations, gemm_pipeline))
    return;
  const uint32_t pipe = gemm_pipeline(C.dt);
  auto launch = [&](uint64_t z0, uint64_t nz, uint64_t m0, uint64_t mc, uint64_t n0, uint64_t nc, uint64_t k0,
                    uint64_t kc) {
    if (accumulates16(C, k0 > 0)) return;
    auto [ra, ba] = ta ? band(A, size_a, z0, nz, k0, kc, lda, m0, mc) : band(A, size_a, z0, nz, m0, mc, lda, k0, kc);
    auto [rb, bb] = tb ? band(B, size_b, z0, nz, n0, nc, ldb, k0, kc) : band(B, size_b, z0, nz, k0, kc, ldb, n0, nc);
    auto [rc, bc] = band(C, size_c, z0, nz, m0, mc, ldc, n0, nc);
    emit(pipe, {window(rc, bc, true), window(ra, ba, false), window(rb, bb, false)},
         {u32(mc, "m"), u32(nc, "n"), u32(kc, "k"), u32(lda, "lda"), u32(ldb, "ldb"), u32(ldc, "ldc"),
          u32(size_a, "matrix"), u32(size_b, "matrix"), u32(size_c, "matrix"), k0 > 0 ? 1u : 0u},
         u32(ceil_div(nc, T), "groups"), u32(ceil_div(mc, T), "groups"), static_cast<uint32_t>(nz));
  };

  if (largest <= max_elems) {
    const uint64_t per = std::min<uint64_t>(max_elems / largest, d_.max_groups[2]);
    for (uint64_t z0 = 0; z0 < batch; z0 += per) launch(z0, std::min(per, batch - z0), 0, M, 0, N, 0, K);
    return;
  }
  // Rows of a band per chunk: A bands over m (or k), B over k (or n), C over m.
  auto rows_fit = [&](uint64_t ld) { return std::max<uint64_t>(1, max_elems / ld); };
  uint64_t mchunk = std::min(M, rows_fit(ldc)), nchunk = N, kchunk = K;
  if (!ta) mchunk = std::min(mchunk, rows_fit(lda));
  if (ta) kchunk = std::min(kchunk, rows_fit(lda));
  if (tb) nchunk = std::min(nchunk, rows_fit(ldb));
  if (!tb) kchunk = std::min(kchunk, rows_fit(ldb));
  for (uint64_t z = 0; z < batch; ++z)
    for (uint64_t m0 = 0; m0 < M; m0 += mchunk)
      for (uint64_t n0 = 0; n0 < N; n0 += nchunk)
        for (uint64_t k0 = 0; k0 < K; k0 += kchunk)
          launch(z, 1, m0, std::min(mchunk, M - m0), n0, std::min(nchunk, N - n0), k0, std::min(kchunk, K - k0));
}

// Split-K for a product whose C is too few tiles to fill a GPU (a weight
// gradient: small C, K = tokens): S slices of K run as S "batches" of the
// chosen GEMM shader (gemm_tiled's 128 x 128 tiles, gemm_coopmat's 128 x
// 128 or 64 x 64), each writing its partial C in f32 into scratch, then
// colsum adds the S partials in slice order (deterministic). S divides K,
// so every slice has the same depth, and is chosen so that about 64K
// invocations run (256 workgroups of gemm_tiled or gemm_coopmat's large
// tile, 512 of its small one). False when splitting would not pay (C already fills the GPU,
// K short).
bool Lowerer::split_k(const ir::DecodedNode& n, uint64_t M, uint64_t N, uint64_t K, bool ta, bool tb, uint32_t tile,
                      uint32_t invocations, const std::function<uint32_t(uint32_t)>& gemm_pipeline) {
  constexpr uint64_t kTargetInvocations = 65536, kMinDepth = 256;
  const uint64_t target = kTargetInvocations / invocations;
  const uint64_t tiles = ceil_div(M, tile) * ceil_div(N, tile);
  if (tiles * 2 > target || K < 2 * kMinDepth) return false;
  uint64_t slices = std::min({ceil_div(target, tiles), K / kMinDepth, uint64_t{16}});
  while (slices > 1 && K % slices != 0) --slices;
  const uint64_t max_elems = limit_ / 4;
  if (slices < 2 || slices * M * N > max_elems) return false;
  const uint64_t depth = K / slices, lda = ta ? M : K, ldb = tb ? K : N;
  const Ref partial = scratch(slices * M * N * 4);
  const Val A = val(n.inputs[0]), B = val(n.inputs[1]);
  emit(gemm_pipeline(kDtypeF32),
       {window(partial, slices * M * N * 4, true), window(A.ref, M * K * A.es(), false),
        window(B.ref, K * N * B.es(), false)},
       {u32(M, "m"), u32(N, "n"), u32(depth, "k"), u32(lda, "lda"), u32(ldb, "ldb"), u32(N, "ldc"),
        u32(ta ? depth * lda : depth, "slice"), u32(tb ? depth : depth * ldb, "slice"), u32(M * N, "slice"), 0u},
       u32(ceil_div(N, tile), "groups"), u32(ceil_div(M, tile), "groups"), static_cast<uint32_t>(slices));
  const Val sums = f32(partial);
  column_sum(0, val(n.outputs[0]), M * N, slices, sums, sums, sums, 1.0f);
  return true;
}

void Lowerer::emit_rows(uint32_t pipe, std::vector<Binding> bindings, const std::vector<uint32_t>& args,
                        uint64_t rows) {
  const uint64_t gx = std::min<uint64_t>(std::max<uint64_t>(rows, 1), d_.max_groups[0]);
  const uint64_t gy = ceil_div(std::max<uint64_t>(rows, 1), gx);
  if (gy > d_.max_groups[1]) fail(KILN_ERR_UNSUPPORTED, "vulkan: too many rows");
  emit(pipe, std::move(bindings), args, static_cast<uint32_t>(gx), static_cast<uint32_t>(gy));
}

void Lowerer::rows_op(uint32_t pipe, uint64_t rows, const std::vector<Operand>& ops, const ArgsFn& args, bool per_row,
                      uint64_t invocations) {
  uint64_t chunk = rows;
  for (const Operand& o : ops)
    if (o.row_bytes > 0) chunk = std::min(chunk, limit_ / o.row_bytes);
  if (chunk == 0) fail(KILN_ERR_UNSUPPORTED, "node " + std::to_string(node_) + ": one row exceeds a storage window");
  for (uint64_t r0 = 0; r0 < rows; r0 += chunk) {
    const uint64_t nr = std::min(chunk, rows - r0);
    std::vector<Binding> b;
    for (const Operand& o : ops)
      b.push_back(o.row_bytes > 0 ? window(plus(o.ref, r0 * o.row_bytes), nr * o.row_bytes, o.writes)
                                  : window(o.ref, o.bytes, o.writes));
    if (per_row)
      emit_rows(pipe, std::move(b), args(r0, nr), nr);
    else
      emit_1d(pipe, std::move(b), args(r0, nr), invocations);
  }
}

// y[c] (+)= column sums over rows (colsum.comp), chunked over rows; chunks
// after the first accumulate. Few columns of many rows are summed in row
// parts first (colsum.comp), so that the GPU gets more than a few dozen
// workgroups: the part sums go to scratch and a second colsum adds them in
// order (deterministic, as the single pass is).
void Lowerer::column_sum(int mode, Val y, uint64_t cols, uint64_t rows, Val x, Val x2, Val stats, float scale) {
  if (mode != 1) x2 = stats = x;               // unused bindings stand in as x
  const uint64_t groups = ceil_div(cols, 16);  // colsum.comp's COLS
  constexpr uint64_t kTargetInvocations = 262144, kMinPartRows = 256, kMaxParts = 64;
  const uint64_t parts = std::min(
      {ceil_div(kTargetInvocations, groups * group_), rows / kMinPartRows, kMaxParts, uint64_t{d_.max_groups[2]}});
  const auto whole = [&](const Val& v, uint64_t row_bytes) { return window(v.ref, rows * row_bytes, false); };
  if (parts >= 2 && groups <= d_.max_groups[0] && rows * cols * 4 <= limit_) {
    const uint64_t part_rows = ceil_div(rows, parts);
    const uint64_t used = ceil_div(rows, part_rows);
    const Val sums = f32(scratch(used * cols * 4));
    emit(pipeline("colsum", {group_, static_cast<uint32_t>(mode)}, pack({sums.dt, x.dt, x2.dt, stats.dt})),
         {window(sums.ref, used * cols * 4, true), whole(x, cols * x.es()), whole(x2, cols * x2.es()),
          whole(stats, mode == 1 ? 2 * stats.es() : cols * stats.es())},
         {u32(rows, "rows"), u32(cols, "cols"), fbits(1.0f), 0u, u32(part_rows, "rows")}, u32(groups, "groups"), 1,
         static_cast<uint32_t>(used));
    column_sum(0, y, cols, used, sums, sums, sums, scale);
    return;
  }
  const uint32_t pipe = pipeline("colsum", {group_, static_cast<uint32_t>(mode)}, pack({y.dt, x.dt, x2.dt, stats.dt}));
  std::vector<Operand> ops{{y.ref, 0, cols * y.es(), true}, {x.ref, cols * x.es(), 0, false}};
  if (mode == 1) {
    ops.push_back({x2.ref, cols * x2.es(), 0, false});
    ops.push_back({stats.ref, 2 * stats.es(), 0, false});
  } else {
    ops.push_back(ops[1]);
    ops.push_back(ops[1]);
  }
  // Row chunks after the first add into y.
  uint64_t chunk = rows;
  for (const Operand& o : ops)
    if (o.row_bytes > 0) chunk = std::min(chunk, limit_ / o.row_bytes);
  if (accumulates16(y, chunk < rows)) return;
  rows_op(
      pipe, rows, ops,
      [&](uint64_t r0, uint64_t nr) {
        return std::vector<uint32_t>{u32(nr, "rows"), u32(cols, "cols"), fbits(scale), r0 > 0 ? 1u : 0u,
                                     u32(nr, "rows")};
      },
      false, groups * group_);  // a workgroup per 16 columns
}

void Lowerer::embedding(size_t index, const ir::DecodedNode& n, const NodeInfo& p, bool grad) {
  const uint64_t rows = static_cast<uint64_t>(p.rows), cols = static_cast<uint64_t>(p.cols),
                 vocab = static_cast<uint64_t>(p.vocab);
  const uint32_t check_index = check("node " + std::to_string(index) + " (" + kiln_op_name(n.op) +
                                     "): an id is outside [0, " + std::to_string(vocab) + ")");
  const Val table = grad ? val(n.outputs[0]) : val(n.inputs[0]);
  const Val other = grad ? val(n.inputs[0]) : val(n.outputs[0]);  // dy or y: [rows, cols]
  const Ref ids = at(n.inputs[1]);
  const Ref flag{Mem::Flag, 0, 0};
  if (grad) elementwise(KILN_OP_FILL, n.outputs[0], -1, -1, vocab * cols, 1, 0.0f);
  // The gradient's first pass links each position to the next with its id
  // (embedding_links.comp); a link is 31 bits.
  Ref links{};
  if (grad) {
    if (rows >= 0x7FFFFFFFu)
      fail(KILN_ERR_UNSUPPORTED, "node " + std::to_string(index) + " (" + kiln_op_name(n.op) +
                                     "): " + std::to_string(rows) + " ids; the vulkan backend takes under 2^31");
    links = scratch(rows * 4);
    emit_1d(pipeline("embedding_links", {group_}), {window(links, rows * 4, true), window(ids, rows * 4, false)},
            {u32(rows, "rows")}, rows);
  }
  // Binding 0 is what the shader writes: dtable, or y.
  const uint32_t pipe =
      pipeline(kiln_op_name(n.op), {group_}, grad ? pack({table.dt, other.dt}) : pack({other.dt, table.dt}));
  const uint64_t band = std::max<uint64_t>(1, limit_ / (cols * 4));
  // The gather also splits its ids and y into chunks of rows; the gradient
  // needs every id in one dispatch (it finds first occurrences).
  const uint64_t row_chunk = grad ? rows : std::max<uint64_t>(1, limit_ / (cols * 4));
  for (uint64_t r0 = 0; r0 < rows; r0 += row_chunk) {
    const uint64_t nr = std::min(row_chunk, rows - r0);
    const uint64_t count = nr * cols;
    u32(count, "elements");
    for (uint64_t v0 = 0; v0 < vocab; v0 += band) {
      const uint64_t vr = std::min(band, vocab - v0);
      std::vector<uint32_t> args{u32(count, "count"), u32(cols, "cols"), u32(vocab, "vocab"), u32(v0, "v0"),
                                 u32(vr, "rows")};
      if (grad) args.push_back(u32(rows, "rows"));
      args.push_back(v0 == 0 ? check_index : 0xFFFFFFFFu);
      // Binding 0 is what the shader writes: dtable's band, or y.
      Binding band_window = window(plus(table.ref, v0 * cols * table.es()), vr * cols * table.es(), grad);
      Binding rows_window = window(plus(other.ref, r0 * cols * other.es()), count * other.es(), !grad);
      if (!grad) std::swap(band_window, rows_window);
      std::vector<Binding> bindings{band_window, rows_window, window(plus(ids, r0 * 4), nr * 4, false),
                                    window(flag, 4, true)};
      if (grad) bindings.push_back(window(links, rows * 4, false));
      emit_1d(pipe, std::move(bindings), args, count);
    }
  }
}

void Lowerer::cross_entropy(size_t index, const ir::DecodedNode& n, const NodeInfo& p, bool grad) {
  const uint64_t rows = static_cast<uint64_t>(p.rows), cols = static_cast<uint64_t>(p.cols);
  const uint32_t check_index = check("node " + std::to_string(index) + " (" + kiln_op_name(n.op) +
                                     "): a target is outside [0, " + std::to_string(cols) + ")");
  const Val out = grad ? val(n.outputs[0]) : f32(scratch(rows * 4));
  const Val logits = val(n.inputs[0]);
  const Ref targets = at(n.inputs[1]);
  const Val dl = grad ? val(n.inputs[2]) : f32(targets);  // the forward binds targets in its place
  const uint32_t pipe = pipeline(kiln_op_name(KILN_OP_CROSS_ENTROPY), {row_group(cols), grad ? 1u : 0u},
                                 pack({out.dt, logits.dt, kDtypeF32, dl.dt}));
  const Operand dloss = grad ? Operand{dl.ref, 0, dl.es(), false} : Operand{targets, 4, 0, false};
  const float inv_n = 1.0f / static_cast<float>(rows);
  rows_op(
      pipe, rows,
      {{out.ref, grad ? cols * out.es() : 4, 0, true},
       {logits.ref, cols * logits.es(), 0, false},
       {targets, 4, 0, false},
       dloss,
       {Ref{Mem::Flag, 0, 0}, 0, 4, true}},
      [&](uint64_t, uint64_t nr) {
        return std::vector<uint32_t>{u32(nr, "rows"), u32(cols, "cols"), fbits(inv_n), check_index};
      },
      true);
  if (!grad) column_sum(0, val(n.outputs[0]), 1, rows, out, out, out, inv_n);
}

void Lowerer::sum_squares(const ir::DecodedNode& n, const NodeInfo& p) {
  const uint64_t count = static_cast<uint64_t>(p.count);
  const uint64_t chunk = chunk_elems();
  std::vector<std::pair<uint64_t, uint64_t>> parts;  // (first element, groups)
  uint64_t total = 0;
  for (uint64_t e0 = 0; e0 < count; e0 += chunk) {
    const uint64_t m = std::min(chunk, count - e0);
    const uint64_t groups = std::min<uint64_t>(256, ceil_div(m, uint64_t{group_} * 4));
    parts.emplace_back(e0, groups);
    total += groups;
  }
  const Ref partial = scratch(total * 4);
  const Val x = val(n.inputs[0]);
  const uint32_t pipe = pipeline(kiln_op_name(n.op), {group_}, pack({kDtypeF32, x.dt}));
  uint64_t at_partial = 0;
  for (const auto& [e0, groups] : parts) {
    const uint64_t m = std::min(chunk, count - e0);
    emit(pipe,
         {window(plus(partial, at_partial * 4), groups * 4, true), window(plus(x.ref, e0 * x.es()), m * x.es(), false)},
         {u32(m, "count")}, static_cast<uint32_t>(groups));
    at_partial += groups;
  }
  const Val partials = f32(partial);
  column_sum(0, val(n.outputs[0]), 1, total, partials, partials, partials, 1.0f);
}

void Lowerer::adamw(const ir::DecodedNode& n, const NodeInfo& p) {
  const uint64_t count = static_cast<uint64_t>(p.count);
  const uint32_t dtypes = pack({code(n.inputs[0]), code(n.inputs[1]), code(n.inputs[2]), code(n.inputs[3]),
                                code(n.inputs[4]), code(n.outputs[0]), code(n.outputs[1]), code(n.outputs[2])});
  const uint32_t pipe = pipeline(kiln_op_name(n.op), {group_, p.weight_decay ? 1u : 0u}, dtypes);
  const uint64_t chunk = chunk_elems();
  for (uint64_t e0 = 0; e0 < count; e0 += chunk) {
    const uint64_t m = std::min(chunk, count - e0);
    auto w = [&](uint32_t value, bool writes) {
      const Val v = val(value);
      return window(plus(v.ref, e0 * v.es()), m * v.es(), writes);
    };
    emit_1d(pipe,
            {w(n.inputs[0], false), w(n.inputs[1], false), w(n.inputs[2], false), w(n.inputs[3], false),
             window(at(n.inputs[4]), 5 * val(n.inputs[4]).es(), false), w(n.outputs[0], true), w(n.outputs[1], true),
             w(n.outputs[2], true)},
            {u32(m, "count"), fbits(n.fattrs[0]), fbits(n.fattrs[1]), fbits(n.fattrs[2])}, m);
  }
}

// DROPOUT in chunks that fit a window; each chunk passes the row and column
// of its first element so the shader's 32-bit index math stays in range.
// Scale and threshold are computed here in double (kiln/philox.h).
void Lowerer::dropout(const ir::DecodedNode& n, const NodeInfo& p) {
  const uint64_t count = static_cast<uint64_t>(p.count);
  // A period past the tensor's end changes nothing (every element is in row
  // 0), so it is clamped; a longer one than the shader indexes is refused.
  const uint64_t period = std::min(static_cast<uint64_t>(p.period), count);
  if (period >= (uint64_t{1} << 31)) fail(KILN_ERR_UNSUPPORTED, "vulkan: dropout period exceeds 2^31 - 1");
  const auto stride = static_cast<uint64_t>(p.stride);
  const double prob = n.fattrs[0];
  const Val y = val(n.outputs[0]), x = val(n.inputs[0]);
  const bool keyed = n.op == KILN_OP_DROPOUT_KEYED;  // its site is the key's word 4
  const uint32_t pipe = pipeline(kiln_op_name(KILN_OP_DROPOUT), {group_}, pack({y.dt, x.dt}));
  const uint64_t chunk = chunk_elems();
  for (uint64_t e0 = 0; e0 < count; e0 += chunk) {
    const uint64_t m = std::min(chunk, count - e0), row0 = e0 / period;
    emit_1d(pipe,
            {window(plus(y.ref, e0 * y.es()), m * y.es(), true), window(plus(x.ref, e0 * x.es()), m * x.es(), false),
             window(at(n.inputs[1]), keyed ? 20 : 16, false)},
            {u32(m, "count"), static_cast<uint32_t>(e0 % period), static_cast<uint32_t>(row0),
             static_cast<uint32_t>(row0 >> 32), static_cast<uint32_t>(period), static_cast<uint32_t>(stride),
             static_cast<uint32_t>(stride >> 32), keyed ? 0u : static_cast<uint32_t>(p.site),
             kiln_dropout_threshold(prob), fbits(kiln_dropout_scale(prob)), keyed ? 1u : 0u},
            m);
  }
}

// CAST_FP8 (cast_fp8.comp) in three passes: each chunk's workgroups write
// the amax of their shares of x to scratch partials; one workgroup per
// window of partials folds them into the amax output, the last one storing
// the scale and its reciprocal in scratch; then the cast, an invocation an
// element. A max, unlike a sum, is the same whatever the split, so the amax
// is the reference's bits.
void Lowerer::cast_fp8(const ir::DecodedNode& n, const NodeInfo& p) {
  const uint64_t count = static_cast<uint64_t>(p.count);
  const Val y = val(n.outputs[0]), x = val(n.inputs[0]);
  const uint64_t chunk = chunk_elems();
  std::vector<uint64_t> groups;  // of each chunk's first pass
  uint64_t total = 0;
  for (uint64_t e0 = 0; e0 < count; e0 += chunk) {
    groups.push_back(std::min<uint64_t>(256, ceil_div(std::min(chunk, count - e0), uint64_t{group_} * 4)));
    total += groups.back();
  }
  const Ref partial = scratch(std::max<uint64_t>(total, 1) * 4), scales = scratch(8);
  const Binding scale_in = window(at(n.inputs[1]), 4, false), amax = window(at(n.outputs[1]), 4, true),
                scales_out = window(scales, 8, true), scales_in = window(scales, 8, false);
  const auto format = static_cast<uint32_t>(p.fp8_format), current = p.fp8_current ? 1u : 0u;
  const uint32_t dtypes = pack({y.dt, x.dt});
  // Elements [e0, e0 + m) of x or y.
  auto part = [&](const Val& v, uint64_t e0, uint64_t m, bool writes) {
    return window(plus(v.ref, e0 * v.es()), m * v.es(), writes);
  };
  // Bindings as cast_fp8.comp declares them: y, x, partials, scale, amax,
  // s and s_inv; one a pass does not use repeats another's window, read-only.
  uint64_t at_partial = 0;
  for (size_t c = 0; c < groups.size(); ++c) {
    const uint64_t e0 = c * chunk, m = std::min(chunk, count - e0);
    const Binding xs = part(x, e0, m, false);
    emit(pipeline(kiln_op_name(n.op), {group_, 0u, 0u, 0u}, dtypes),
         {xs, xs, window(plus(partial, at_partial * 4), groups[c] * 4, true), scale_in, scale_in, scale_in},
         {u32(m, "count"), 0u, 0u}, static_cast<uint32_t>(groups[c]));
    at_partial += groups[c];
  }
  // No partials (an empty x) still stores amax 0 and the scales.
  const uint64_t per_window = limit_ / 4;
  for (uint64_t q0 = 0; q0 == 0 || q0 < total; q0 += per_window) {
    const uint64_t nq = std::min(per_window, total - q0);
    const Binding partials = window(plus(partial, q0 * 4), std::max<uint64_t>(nq, 1) * 4, false);
    emit(pipeline(kiln_op_name(n.op), {group_, 1u, format, current}, dtypes),
         {partials, partials, partials, scale_in, amax, scales_out},
         {u32(nq, "partials"), q0 == 0 ? 1u : 0u, q0 + nq >= total ? 1u : 0u}, 1);
  }
  for (uint64_t e0 = 0; e0 < count; e0 += chunk) {
    const uint64_t m = std::min(chunk, count - e0);
    emit_1d(pipeline(kiln_op_name(n.op), {group_, 2u, format, 0u}, dtypes),
            {part(y, e0, m, true), part(x, e0, m, false), scales_in, scales_in, scales_in, scales_in},
            {u32(m, "count"), 0u, 0u}, m);
  }
}

// bf16/f16 storage. Natively (a device with 16-bit storage): every shader
// loads and stores 16-bit bindings itself (shaders/io.glsl, the "<shader>16"
// builds, Pipeline::dtypes), widening to f32 in registers and rounding once
// at the store to nearest even, bit-exact with kiln/half.h; so each op
// computes the reference's definition with no extra pass, and CAST is one
// converting copy. Staged, the older mechanism: the node's 16-bit inputs
// are widened into f32 copies in its scratch, its kernels run on those
// (at() hands them the copies), and its 16-bit outputs are rounded from
// their f32 copies into place (convert16.comp), one more pass over the
// 16-bit data each way. Staging stays for a node whose kernel would
// accumulate into a 16-bit output across dispatches (accumulates16) and
// under KILN_VULKAN_STAGE16=1 (tests, before/after measurements).
void Lowerer::node(size_t index, const ir::DecodedNode& n, const NodeInfo& p) {
  node_ = static_cast<int32_t>(index);
  scratch_used_ = 0;
  staged_.clear();
  restage_ = false;
  if (!stage16_) {
    const size_t mark = s_.dispatches.size();
    lower_op(index, n, p);
    if (!restage_) return;
    s_.dispatches.resize(mark);  // redone staged below
    scratch_used_ = 0;
    restage_ = false;
  }
  if (n.op == KILN_OP_CAST || n.op == KILN_OP_RESHAPE) {
    const kiln_dtype from = g_.values[n.inputs[0]].dtype, to = g_.values[n.outputs[0]].dtype;
    const Ref src = own(n.inputs[0]), dst = own(n.outputs[0]);
    if (from == to && src.slot == dst.slot && src.offset == dst.offset) return;  // same memory and bits
    if (from == KILN_F32 && (to == KILN_BF16 || to == KILN_F16))
      return convert16(to == KILN_BF16 ? 2 : 3, n.outputs[0], src);
    if (to == KILN_F32 && (from == KILN_BF16 || from == KILN_F16))
      return convert16(from == KILN_BF16 ? 0 : 1, n.inputs[0], dst);
  }
  stage_in(n);
  lower_op(index, n, p);
  stage_out();
  staged_.clear();
}

void Lowerer::stage_in(const ir::DecodedNode& n) {
  auto staged = [&](uint32_t id) {
    return std::any_of(staged_.begin(), staged_.end(), [&](const Staged& s) { return s.id == id; });
  };
  auto is16 = [&](uint32_t id) { return g_.values[id].dtype == KILN_BF16 || g_.values[id].dtype == KILN_F16; };
  for (uint32_t id : n.inputs) {
    if (!is16(id) || staged(id)) continue;
    const Staged s{id, scratch(static_cast<uint64_t>(g_.values[id].numel()) * 4), false};
    convert16(g_.values[id].dtype == KILN_BF16 ? 0 : 1, id, s.copy);
    staged_.push_back(s);
  }
  for (uint32_t id : n.outputs) {
    if (!is16(id)) continue;
    auto it = std::find_if(staged_.begin(), staged_.end(), [&](const Staged& s) { return s.id == id; });
    if (it != staged_.end())
      it->output = true;
    else
      staged_.push_back(Staged{id, scratch(static_cast<uint64_t>(g_.values[id].numel()) * 4), true});
  }
}

void Lowerer::stage_out() {
  for (const Staged& s : staged_)
    if (s.output) convert16(g_.values[s.id].dtype == KILN_BF16 ? 2 : 3, s.id, s.copy);
}

// convert16.comp between a 16-bit value and its f32 copy, in chunks of an
// even element count so every 16-bit window starts on a 4-byte boundary.
void Lowerer::convert16(uint32_t mode, uint32_t value, Ref f32_copy) {
  if (staged_nodes_.empty() || staged_nodes_.back() != node_) staged_nodes_.push_back(node_);
  const Ref half = own(value);
  if (half.offset % 4 != 0)
    fail(KILN_ERR_UNSUPPORTED, "node " + std::to_string(node_) + ": value " + std::to_string(value) +
                                   " starts off a 4-byte boundary; the vulkan backend binds 16-bit values from one");
  const bool widen = mode < 2;
  const uint32_t pipe = pipeline("convert16", {group_, mode});
  const auto count = static_cast<uint64_t>(g_.values[value].numel());
  const uint64_t chunk = chunk_elems(2);
  for (uint64_t e0 = 0; e0 < count; e0 += chunk) {
    const uint64_t n = std::min(chunk, count - e0);
    Binding w16 = window(plus(half, e0 * 2), n * 2, !widen);
    Binding w32 = window(plus(f32_copy, e0 * 4), n * 4, widen);
    std::vector<Binding> bindings = widen ? std::vector<Binding>{w32, w16} : std::vector<Binding>{w16, w32};
    emit_1d(pipe, std::move(bindings), {u32(n, "count")}, n);
  }
}

void Lowerer::lower_op(size_t index, const ir::DecodedNode& n, const NodeInfo& p) {
  const uint64_t count = static_cast<uint64_t>(p.count);
  switch (n.op) {
    case KILN_OP_FILL: return elementwise(n.op, n.outputs[0], -1, -1, count, 1, n.fattrs[0]);
    // The shader branches on the op code itself (kiln_ops.glsl, from ops.h).
    case KILN_OP_ADD:
    case KILN_OP_MUL:
    case KILN_OP_MAXIMUM: return elementwise(n.op, n.outputs[0], n.inputs[0], n.inputs[1], count, p.bcast, 0.0f);
    case KILN_OP_SCALE: return elementwise(n.op, n.outputs[0], n.inputs[0], -1, count, 1, n.fattrs[0]);
    case KILN_OP_GELU:
    case KILN_OP_SILU:
    case KILN_OP_GELU_ERF:
    case KILN_OP_EXP:
    case KILN_OP_LOG:
    case KILN_OP_TANH:
    case KILN_OP_ERF: return elementwise(n.op, n.outputs[0], n.inputs[0], -1, count, 1, 0.0f);
    case KILN_OP_GELU_GRAD:
    case KILN_OP_SILU_GRAD:
    case KILN_OP_GELU_ERF_GRAD: return elementwise(n.op, n.outputs[0], n.inputs[0], n.inputs[1], count, 1, 0.0f);
    case KILN_OP_CLAMP: return elementwise(n.op, n.outputs[0], n.inputs[0], -1, count, 1, n.fattrs[0], n.fattrs[1]);
    case KILN_OP_CLAMP_GRAD:
      return elementwise(n.op, n.outputs[0], n.inputs[0], n.inputs[1], count, 1, n.fattrs[0], n.fattrs[1]);
    case KILN_OP_MATMUL: return matmul(n, p);
    case KILN_OP_ATTENTION:
    case KILN_OP_ATTENTION_GRAD:
    case KILN_OP_ATTENTION_DROPOUT:
    case KILN_OP_ATTENTION_DROPOUT_GRAD: return attention(n);
    case KILN_OP_EMBEDDING: return embedding(index, n, p, false);
    case KILN_OP_EMBEDDING_GRAD: return embedding(index, n, p, true);
    // LayerNorm and RMSNorm share layernorm.comp: RMS (specialization
    // constant 2) drops the mean and the bias. Forward RMSNorm has no beta, so
    // x stands in for the unused binding.
    case KILN_OP_LAYERNORM:
    case KILN_OP_LAYERNORM_GRAD:
    case KILN_OP_RMSNORM:
    case KILN_OP_RMSNORM_GRAD: {
      const bool grad = kiln_op_table[n.op].rule == KILN_RULE_NORM_GRAD;
      const bool rms = n.op == KILN_OP_RMSNORM || n.op == KILN_OP_RMSNORM_GRAD;
      const uint64_t rows = static_cast<uint64_t>(p.rows), cols = static_cast<uint64_t>(p.cols);
      const Val y = val(n.outputs[0]), x = val(n.inputs[0]), gamma = val(n.inputs[1]);
      const Val third = rms && !grad ? x : val(n.inputs[2]);  // dy, beta, or x standing in
      const Val stats = grad ? f32(scratch(rows * 8)) : x;    // the forward binds x in its place
      std::vector<uint32_t> constants{row_group(cols), grad ? 1u : 0u};
      if (rms) constants.push_back(1u);  // LayerNorm's pipelines stay as they were
      auto row = [&](const Val& v) { return cols * v.es(); };
      const Operand third_op =
          grad || rms ? Operand{third.ref, row(third), 0, false} : Operand{third.ref, 0, row(third), false};
      rows_op(
          pipeline(kiln_op_name(KILN_OP_LAYERNORM), constants, pack({y.dt, x.dt, gamma.dt, third.dt, stats.dt})), rows,
          {{y.ref, row(y), 0, true},
           {x.ref, row(x), 0, false},
           {gamma.ref, 0, row(gamma), false},
           third_op,
           grad ? Operand{stats.ref, 8, 0, true} : Operand{x.ref, row(x), 0, false}},
          [&](uint64_t, uint64_t nr) {
            return std::vector<uint32_t>{u32(nr, "rows"), u32(cols, "cols"), fbits(n.fattrs[0])};
          },
          true);
      if (grad) {
        column_sum(1, val(n.outputs[1]), cols, rows, third, x, stats, 1.0f);
        if (!rms) column_sum(0, val(n.outputs[2]), cols, rows, third, third, third, 1.0f);
      }
      return;
    }
    case KILN_OP_CAUSAL_SOFTMAX:
    case KILN_OP_DOCUMENT_SOFTMAX:
    case KILN_OP_SOFTMAX_GRAD: {
      const bool grad = n.op == KILN_OP_SOFTMAX_GRAD, docs = n.op == KILN_OP_DOCUMENT_SOFTMAX;
      const uint64_t rows = static_cast<uint64_t>(p.rows), cols = static_cast<uint64_t>(p.cols);
      const Val y = val(n.outputs[0]), x = val(n.inputs[0]), dy = val(n.inputs[grad ? 1 : 0]);
      // Binding 3: the document starts, whole in every chunk (x stands in
      // where the op has none); a row's sample is its global row / rps.
      const Operand starts = docs ? Operand{val(n.inputs[1]).ref, 0, static_cast<uint64_t>(p.batch) * cols * 4, false}
                                  : Operand{x.ref, cols * x.es(), 0, false};
      const uint64_t rps = docs ? rows / static_cast<uint64_t>(p.batch) : 1;
      rows_op(
          pipeline("softmax", {row_group(cols), grad ? 1u : 0u, docs ? 1u : 0u}, pack({y.dt, x.dt, dy.dt, KILN_F32})),
          rows,
          {{y.ref, cols * y.es(), 0, true},
           {x.ref, cols * x.es(), 0, false},
           {dy.ref, cols * dy.es(), 0, false},
           starts},
          [&](uint64_t r0, uint64_t nr) {
            return std::vector<uint32_t>{
                u32(nr, "rows"),           u32(cols, "cols"),       u32(r0 % cols, "row"),         fbits(n.fattrs[0]),
                u32(rps, "rows a sample"), u32(r0 / rps, "sample"), u32(r0 % rps, "row in sample")};
          },
          true);
      return;
    }
    case KILN_OP_ALIBI: {
      // Whole rows per dispatch (alibi.comp derives head and query from the
      // row); the slopes are bound whole.
      const uint64_t rows = static_cast<uint64_t>(p.rows), cols = static_cast<uint64_t>(p.cols),
                     heads = static_cast<uint64_t>(p.heads);
      const Val y = val(n.outputs[0]), x = val(n.inputs[0]), slopes = val(n.inputs[1]);
      rows_op(
          pipeline(kiln_op_name(n.op), {group_}, pack({y.dt, x.dt, slopes.dt})), rows,
          {{y.ref, cols * y.es(), 0, true},
           {x.ref, cols * x.es(), 0, false},
           {slopes.ref, 0, heads * slopes.es(), false}},
          [&](uint64_t r0, uint64_t nr) {
            return std::vector<uint32_t>{u32(nr * cols, "count"), u32(cols, "cols"), u32(heads, "heads"),
                                         u32(r0 % (heads * cols), "row")};
          },
          false, rows * cols);
      return;
    }
    case KILN_OP_CROSS_ENTROPY: return cross_entropy(index, n, p, false);
    case KILN_OP_CROSS_ENTROPY_GRAD: return cross_entropy(index, n, p, true);
    case KILN_OP_SUM_TO: {
      const Val x = val(n.inputs[0]);
      return column_sum(0, val(n.outputs[0]), static_cast<uint64_t>(p.cols), static_cast<uint64_t>(p.rows), x, x, x,
                        1.0f);
    }
    case KILN_OP_SUM_SQUARES: return sum_squares(n, p);
    case KILN_OP_ADAMW: return adamw(n, p);
    case KILN_OP_DROPOUT:
    case KILN_OP_DROPOUT_KEYED: return dropout(n, p);
    case KILN_OP_CAST_FP8: return cast_fp8(n, p);
    // A copy, converting between dtypes (copy2d's 16-bit build), or between
    // f32 copies where node() stages the 16-bit side.
    case KILN_OP_CAST:
    case KILN_OP_RESHAPE: {
      const Val vs = val(n.inputs[0]), vd = val(n.outputs[0]);
      const Ref src = vs.ref, dst = vd.ref;
      if (vs.dt == vd.dt && src.mem == dst.mem && src.slot == dst.slot && src.offset == dst.offset)
        return;  // same memory and bits
      if (src.mem == dst.mem && src.slot == dst.slot && src.offset < dst.offset + count * vd.es() &&
          dst.offset < src.offset + count * vs.es())
        fail(KILN_ERR_INVALID_ARGUMENT,
             "node " + std::to_string(index) + " (" + backend::op_name(n.op) + "): overlapping copy");
      return copy2d(vd, vs, count, 1, 1, 1);
    }
    case KILN_OP_PERMUTE: return permute(n, p);
    case KILN_OP_ROPE:
    case KILN_OP_ROPE_GRAD: return rope(n, p);
    case KILN_OP_SPLIT: {
      const uint64_t rows = static_cast<uint64_t>(p.rows), inner = static_cast<uint64_t>(p.inner),
                     parts = static_cast<uint64_t>(p.parts);
      for (uint64_t i = 0; i < parts; ++i) {
        const Val x = val(n.inputs[0]);
        copy2d(val(n.outputs[i]), Val{plus(x.ref, i * inner * x.es()), x.dt}, rows, inner, parts * inner, inner);
      }
      return;
    }
    case KILN_OP_CONCAT: {
      const uint64_t rows = static_cast<uint64_t>(p.rows), inner = static_cast<uint64_t>(p.inner);
      uint64_t col = 0;
      for (size_t i = 0; i < n.inputs.size(); ++i) {
        const uint64_t w = static_cast<uint64_t>(p.inners[i]);
        const Val y = val(n.outputs[0]);
        copy2d(Val{plus(y.ref, col * y.es()), y.dt}, val(n.inputs[i]), rows, w, w, inner);
        col += w;
      }
      return;
    }
    default: break;
  }
  // compile refuses an op outside the plugin's support list before lowering.
  fail(KILN_ERR_INTERNAL,
       std::string("node ") + std::to_string(index) + ": no lowering for op " + backend::op_name(n.op));
}

// A barrier goes before a dispatch that reads or writes memory an earlier
// dispatch (since the last barrier) wrote, or writes memory one read:
// independent dispatches (e.g. the parts of a SPLIT) run without one.
void Lowerer::place_barriers() {
  struct Range {
    Mem mem;
    uint32_t slot;
    uint64_t lo, hi;
  };
  auto overlaps = [](const Range& a, const Range& b) {
    return a.mem == b.mem && a.slot == b.slot && a.lo < b.hi && b.lo < a.hi;
  };
  std::vector<Range> reads, writes;
  for (Dispatch& d : s_.dispatches) {
    bool conflict = false;
    for (const Binding& b : d.bindings) {
      const Range r{b.ref.mem, b.ref.slot, b.ref.offset, b.ref.offset + b.bytes};
      for (const Range& w : writes) conflict = conflict || overlaps(r, w);
      if (b.writes)
        for (const Range& rd : reads) conflict = conflict || overlaps(r, rd);
    }
    if (conflict) {
      d.barrier = true;
      reads.clear();
      writes.clear();
    }
    for (const Binding& b : d.bindings)
      (b.writes ? writes : reads).push_back(Range{b.ref.mem, b.ref.slot, b.ref.offset, b.ref.offset + b.bytes});
  }
}

}  // namespace

// The ops lower() turns into pipelines (the switch in Lowerer::node), the one
// list op_supported and compile read. The vocab-parallel cross-entropy pieces
// have no shaders here: the host runs them on the cpu fallback.
constexpr kiln_op kSupportedOps[] = {
    KILN_OP_FILL,
    KILN_OP_ADD,
    KILN_OP_MUL,
    KILN_OP_SCALE,
    KILN_OP_GELU,
    KILN_OP_GELU_GRAD,
    KILN_OP_MATMUL,
    KILN_OP_EMBEDDING,
    KILN_OP_EMBEDDING_GRAD,
    KILN_OP_LAYERNORM,
    KILN_OP_LAYERNORM_GRAD,
    KILN_OP_RMSNORM,
    KILN_OP_RMSNORM_GRAD,
    KILN_OP_CAUSAL_SOFTMAX,
    KILN_OP_DOCUMENT_SOFTMAX,
    KILN_OP_SOFTMAX_GRAD,
    KILN_OP_CROSS_ENTROPY,
    KILN_OP_CROSS_ENTROPY_GRAD,
    KILN_OP_SUM_TO,
    KILN_OP_RESHAPE,
    KILN_OP_PERMUTE,
    KILN_OP_SPLIT,
    KILN_OP_CONCAT,
    KILN_OP_SUM_SQUARES,
    KILN_OP_ADAMW,
    KILN_OP_SILU,
    KILN_OP_SILU_GRAD,
    KILN_OP_CLAMP,
    KILN_OP_CLAMP_GRAD,
    KILN_OP_ROPE,
    KILN_OP_ROPE_GRAD,
    KILN_OP_DROPOUT,
    KILN_OP_DROPOUT_KEYED,
    KILN_OP_ALIBI,
    KILN_OP_GELU_ERF,
    KILN_OP_GELU_ERF_GRAD,
    KILN_OP_CAST,
    KILN_OP_EXP,
    KILN_OP_LOG,
    KILN_OP_TANH,
    KILN_OP_ERF,
    KILN_OP_MAXIMUM,
    KILN_OP_CAST_FP8,  // not FP8_GRAD_CAST: a composite, a RESHAPE on the host
    KILN_OP_ATTENTION,
    KILN_OP_ATTENTION_GRAD,
    KILN_OP_ATTENTION_DROPOUT,
    KILN_OP_ATTENTION_DROPOUT_GRAD,
};
const backend::SupportList kSupported{kSupportedOps, std::size(kSupportedOps), "vulkan"};

Schedule lower(const ir::DecodedGraph& g, const std::vector<NodeInfo>& info, const DeviceInfo& device) {
  Lowerer l(g, device);
  std::vector<uint64_t> slot_bytes(g.num_slots, 0);
  if (!slot_bytes.empty()) slot_bytes[0] = g.arena_bytes;
  for (const ir::DecodedValue& v : g.values)
    slot_bytes[v.slot] = std::max<uint64_t>(slot_bytes[v.slot], v.offset + v.bytes());
  std::vector<ElementwiseChain> chains;
  if (l.fuses()) chains = elementwise_chains(g, info, l.window_limit());
  CastFolds folds;
  if (l.folds_casts()) {
    std::vector<bool> in_chain(g.nodes.size(), false);
    for (const ElementwiseChain& c : chains)
      for (uint32_t i : c.nodes) in_chain[i] = true;
    folds = fold_widening_casts(g, in_chain);
    l.fold(folds.source_of);
  }
  auto next_chain = chains.begin();
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (!folds.folded.empty() && folds.folded[i]) continue;
    if (next_chain != chains.end() && next_chain->nodes.front() == i) {
      const ElementwiseChain& c = *next_chain++;
      if (l.chain(c, info)) {
        i = c.nodes.back();
        continue;
      }
    }
    l.node(i, g.nodes[i], info[i]);
  }
  return l.finish(slot_bytes);
}

}  // namespace kiln::vk
