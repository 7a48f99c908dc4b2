// The code generation driver: fuse, generate each unit, place every value
// the kernels touch in an arena, deduplicate kernel texts, and assemble the
// program and its schedule.
#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <map>

#include "emit.h"

namespace kiln::ocl {

// ---------------------------------------------------------------- helpers

std::string Kernel::param(const Operand& op, const std::string& type) {
  const std::string n = std::to_string(operands_.size());
  operands_.push_back(op);
  if (!params_.empty()) params_ += ", ";
  params_ += "__global " + type + "* a" + n + ", ulong o" + n;
  prologue_ += "  a" + n + " += o" + n + ";\n";
  return "a" + n;
}

std::string Kernel::flag_param(const Operand& check) {
  const std::string n = std::to_string(operands_.size());
  operands_.push_back(check);
  if (!params_.empty()) params_ += ", ";
  params_ += "__global int* a" + n + ", ulong o" + n;
  return "atomic_min(a" + n + ", (int)o" + n + ")";
}

std::string Kernel::text(uint64_t reqd_group) const {
  std::string attr;
  if (reqd_group > 0) attr = "__attribute__((reqd_work_group_size(" + num(reqd_group) + ", 1, 1))) ";
  return "__kernel " + attr + "void KNAME(" + params_ + ") {\n" + prologue_ + body_ + "}\n";
}

void launch(EmitContext& ctx, const Kernel& k, int32_t node, uint64_t global, uint64_t local) {
  PendingStep p;
  p.step.kind = StepKind::Kernel;
  p.step.node = node;
  p.step.dims = 1;
  p.step.global[0] = round_up(std::max<uint64_t>(global, 1), local);
  p.step.local[0] = local;
  p.text = static_cast<int32_t>(ctx.unit.texts.size());
  ctx.unit.texts.push_back(k.text(local));
  p.operands = k.operands();
  ctx.unit.steps.push_back(std::move(p));
}

std::string guard(const std::string& index, uint64_t count, uint64_t group) {
  if (group > 0 && count % group == 0) return "";
  return "if (" + index + " >= " + num(count) + ") return;";
}

std::string flt(float v) {
  if (std::isnan(v)) return "NAN";
  if (std::isinf(v)) return v > 0 ? "INFINITY" : "(-INFINITY)";
  char buf[48];
  std::snprintf(buf, sizeof(buf), "%af", static_cast<double>(v));
  return v < 0 ? "(" + std::string(buf) + ")" : std::string(buf);
}

std::string idx(uint64_t limit) { return limit < (uint64_t{1} << 31) ? "uint" : "ulong"; }

std::string num(uint64_t v) {
  // Unsigned literals so index arithmetic never turns signed.
  return std::to_string(v) + (v < (uint64_t{1} << 31) ? "u" : "ul");
}

uint64_t pow2_floor(uint64_t v) {
  uint64_t p = 1;
  while (p * 2 <= v) p *= 2;
  return p;
}

Target target_for(const DeviceInfo& device) {
  // For tests only: KILN_OPENCL_GPU_CODEGEN=1 generates the GPU variants
  // (work group per row) on any device, so a CPU-only machine exercises them.
  const bool cpu = device.kind == KILN_DEVICE_CPU && !gpu_codegen_forced();
  Target t;
  t.row_per_item = cpu;
  t.max_work_group = std::max<size_t>(1, std::min<size_t>(device.max_work_group_size, 256));
  t.elementwise_group = std::min<size_t>(t.max_work_group, 64);
  t.pretranspose_batched_b = cpu;
  t.gemm = gemm_policy();
  t.cpu_device = device.kind == KILN_DEVICE_CPU;
  t.float_vector = std::clamp<uint32_t>(device.float_vector, 1, 16);
  if (device.local_mem_bytes > 0) t.local_mem_bytes = device.local_mem_bytes;
  return t;
}

// ---------------------------------------------------------------- driver

namespace {

constexpr uint64_t kArenaAlign = 16;  // elements: 64 bytes

struct Placement {
  bool arena = false;
  uint32_t slot = 0;
  uint64_t offset = 0;  // elements
};

// The generators of single-node units, each with the ops it lists.
// `native16`: the generator reads and writes bf16/f16 memory itself; the
// others are written for f32 and get their 16-bit values staged.
struct Generator {
  const std::span<const kiln_op>* ops;
  void (*emit)(EmitContext& ctx, uint32_t node);
  bool native16 = false;
};
const Generator kGenerators[] = {
    {&kMatmulOps, emit_matmul, true},  // stages only the shapes it gives CLBlast
    {&kRowOps, emit_rows},
    {&kReduceOps, emit_reduce},
    {&kLayoutOps, emit_layout, true},
    {&kEmbeddingGradOps, emit_embedding_grad},
    {&kRopeOps, emit_rope},
    {&kAlibiOps, emit_alibi},
    {&kCastOps, emit_cast, true},
    {&kFp8Ops, emit_cast_fp8, true},
    {&kAttentionOps, emit_attention, true},
};

bool lists(const std::span<const kiln_op>& ops, int32_t op) {
  return std::any_of(ops.begin(), ops.end(), [op](kiln_op o) { return static_cast<int32_t>(o) == op; });
}

void emit_unit(EmitContext& ctx, const Unit& u, const std::vector<bool>& stored) {
  if (u.elementwise) return emit_elementwise(ctx, u, stored);
  const uint32_t ni = u.nodes[0];
  for (const Generator& gen : kGenerators) {
    if (!lists(*gen.ops, ctx.g.nodes[ni].op)) continue;
    gen.emit(ctx, ni);
    if (!gen.native16) stage_16bit(ctx, ni);
    return;
  }
  fail(KILN_ERR_INTERNAL, std::string("no generator lists ") + op_name(ctx.g.nodes[ni].op));
}

// What a unit computes, for profiles: "add+gelu n=262144", "matmul 1x2048x384x128 tB".
std::string unit_label(const ir::DecodedGraph& g, const std::vector<NodeInfo>& info, const Unit& u) {
  std::string label;
  for (uint32_t ni : u.nodes) label += (label.empty() ? "" : "+") + std::string(op_name(g.nodes[ni].op));
  const NodeInfo& f = info[u.nodes[0]];
  const ir::DecodedNode& n = g.nodes[u.nodes[0]];
  if (u.elementwise) return label + " n=" + std::to_string(f.count);
  if (n.op == KILN_OP_MATMUL)
    return label + " " + std::to_string(f.batch) + "x" + std::to_string(f.m) + "x" + std::to_string(f.n) + "x" +
           std::to_string(f.k) + (f.trans_a ? " tA" : "") + (f.trans_b ? " tB" : "");
  label += " [";
  const auto& dims = g.values[n.inputs.empty() ? n.outputs[0] : n.inputs[0]].dims;
  for (size_t i = 0; i < dims.size(); ++i) label += (i ? "," : "") + std::to_string(dims[i]);
  return label + "]";
}

// Best fit by size, largest first, over [first, last] unit lifetimes.
struct Block {
  uint64_t size;
  int first, last;
  uint64_t offset = 0;
};

uint64_t place(std::vector<Block*> blocks) {
  std::stable_sort(blocks.begin(), blocks.end(), [](const Block* a, const Block* b) { return a->size > b->size; });
  std::vector<const Block*> placed;
  uint64_t total = 0;
  for (Block* b : blocks) {
    std::vector<std::pair<uint64_t, uint64_t>> busy;
    for (const Block* p : placed)
      if (p->first <= b->last && b->first <= p->last) busy.emplace_back(p->offset, p->offset + p->size);
    std::sort(busy.begin(), busy.end());
    uint64_t best = UINT64_MAX, best_gap = UINT64_MAX, cursor = 0;
    for (const auto& [s, e] : busy) {
      if (s >= cursor + b->size && s - cursor < best_gap) {
        best = cursor;
        best_gap = s - cursor;
      }
      cursor = std::max(cursor, e);
    }
    b->offset = best == UINT64_MAX ? cursor : best;
    placed.push_back(b);
    total = std::max(total, b->offset + b->size);
  }
  return total;
}

}  // namespace

const std::vector<kiln_op>& supported_ops() {
  static const std::vector<kiln_op> ops = [] {
    std::vector<kiln_op> all(kElementwiseOps.begin(), kElementwiseOps.end());
    for (const Generator& gen : kGenerators) all.insert(all.end(), gen.ops->begin(), gen.ops->end());
    return all;
  }();
  return ops;
}

Program generate(const ir::DecodedGraph& g, const std::vector<NodeInfo>& info, const Target& target) {
  Fusion fusion = fuse(g, info);
  std::vector<std::string> checks;
  std::vector<UnitCode> codes(fusion.units.size());
  // Standalone reshapes of arena values alias their input: the same bytes.
  std::vector<uint32_t> root(g.values.size());
  for (uint32_t v = 0; v < root.size(); ++v) root[v] = v;
  for (size_t u = 0; u < fusion.units.size(); ++u) {
    const Unit& unit = fusion.units[u];
    const ir::DecodedNode& first = g.nodes[unit.nodes[0]];
    if (!unit.elementwise && first.op == KILN_OP_RESHAPE) {
      const uint32_t in = first.inputs[0], out = first.outputs[0];
      if (g.values[in].slot == 0 && g.values[out].slot == 0) {
        root[out] = root[in];
        continue;
      }
    }
    EmitContext ctx{g, info, target, checks, codes[u]};
    emit_unit(ctx, unit, fusion.stored);
    const std::string label = unit_label(g, info, unit);
    for (size_t i = 0; i < codes[u].steps.size(); ++i)
      codes[u].steps[i].step.label = label + (codes[u].steps.size() > 1 ? " #" + std::to_string(i) : "");
  }

  // Lifetimes, in units, of every arena value a step touches, and of temps.
  std::vector<Block> value_blocks(g.values.size(), Block{0, INT32_MAX, -1});
  std::vector<std::vector<Block>> temp_blocks(codes.size());
  for (size_t u = 0; u < codes.size(); ++u) {
    for (const PendingStep& s : codes[u].steps)
      for (const Operand& op : s.operands) {
        if (op.kind != Operand::Kind::Value || g.values[op.id].slot != 0) continue;
        Block& b = value_blocks[root[op.id]];
        b.first = std::min(b.first, static_cast<int>(u));
        b.last = std::max(b.last, static_cast<int>(u));
      }
    for (uint64_t elems : codes[u].temps)
      temp_blocks[u].push_back(
          Block{round_up(std::max<uint64_t>(elems, 1), kArenaAlign), static_cast<int>(u), static_cast<int>(u)});
  }
  std::vector<Block*> blocks;
  for (uint32_t v = 0; v < g.values.size(); ++v) {
    if (value_blocks[v].last < 0) continue;
    // An alias root spans the uses of every value that shares its bytes.
    value_blocks[v].size = 0;
    blocks.push_back(&value_blocks[v]);
  }
  for (uint32_t v = 0; v < g.values.size(); ++v) {
    Block& b = value_blocks[root[v]];
    // Sizes in 4-byte words: a 16-bit value takes half as many.
    const uint64_t words = (g.values[v].bytes() + 3) / 4;
    if (b.last >= 0) b.size = std::max(b.size, round_up(std::max<uint64_t>(words, 1), kArenaAlign));
  }
  for (auto& tb : temp_blocks)
    for (Block& b : tb) blocks.push_back(&b);
  Program prog;
  Schedule& s = prog.schedule;
  s.arena_bytes = place(blocks) * 4;

  auto resolve = [&](const Operand& op, size_t u) -> Ref {
    Ref r;
    switch (op.kind) {
      case Operand::Kind::Flag:
        r.mem = Mem::Flag;
        r.offset = op.id;
        return r;
      case Operand::Kind::Temp:
        r.mem = Mem::Arena;
        r.offset = temp_blocks[u][op.id].offset + op.extra;
        return r;
      case Operand::Kind::Value: {
        // In the value's elements: kernels index a 16-bit value's pointer in
        // 2-byte steps (only kernels take 16-bit values: staging and the
        // layout ops keep them off Copy and GEMM steps, which count words).
        const ir::DecodedValue& v = g.values[op.id];
        const uint64_t per_word = 4 / kiln_dtype_size(v.dtype);
        if (v.slot == 0) {
          r.mem = Mem::Arena;
          r.offset = value_blocks[root[op.id]].offset * per_word + op.extra;
        } else {
          r.mem = Mem::Slot;
          r.slot = v.slot;
          r.offset = v.offset / kiln_dtype_size(v.dtype) + op.extra;
        }
        return r;
      }
    }
    return r;
  };

  // Identical kernel texts become one kernel.
  std::map<std::string, uint32_t> kernel_of_text;
  std::vector<const std::string*> texts;
  for (size_t u = 0; u < codes.size(); ++u)
    for (PendingStep& p : codes[u].steps) {
      Step st = p.step;
      if (st.kind == StepKind::Kernel) {
        const std::string& text = codes[u].texts[static_cast<size_t>(p.text)];
        auto [it, inserted] = kernel_of_text.emplace(text, static_cast<uint32_t>(texts.size()));
        if (inserted) texts.push_back(&it->first);
        st.kernel = it->second;
      }
      for (const Operand& op : p.operands) st.args.push_back(resolve(op, u));
      s.steps.push_back(std::move(st));
    }

  prog.source =
      "// Generated by the kiln OpenCL backend. Elementwise results must match\n"
      "// the reference op by op, so no contraction into fused multiply-adds.\n"
      "#pragma OPENCL FP_CONTRACT OFF\n\n";
  if (std::any_of(g.values.begin(), g.values.end(), [](const ir::DecodedValue& v) { return is_16bit(v.dtype); }))
    prog.source += kLowPrecisionPrelude;
  if (std::any_of(g.nodes.begin(), g.nodes.end(), [](const ir::DecodedNode& n) { return n.op == KILN_OP_CAST_FP8; }))
    prog.source += kFp8Prelude;
  for (size_t k = 0; k < texts.size(); ++k) {
    const std::string name = "k" + std::to_string(k);
    std::string t = *texts[k];
    t.replace(t.find("KNAME"), 5, name);
    prog.source += t + "\n";
    s.kernel_names.push_back(name);
  }
  if (texts.empty()) prog.source.clear();

  s.num_slots = g.num_slots;
  s.slot_bytes.assign(g.num_slots, 0);
  for (const auto& v : g.values)
    if (v.slot != 0) s.slot_bytes[v.slot] = std::max(s.slot_bytes[v.slot], v.offset + v.bytes());
  s.arena_in_slot0 = s.arena_bytes <= g.arena_bytes;
  if (s.arena_in_slot0) s.slot_bytes[0] = s.arena_bytes;
  s.checks = std::move(checks);
  return prog;
}

}  // namespace kiln::ocl
