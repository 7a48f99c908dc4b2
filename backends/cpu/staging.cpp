#include "staging.h"

#include "kiln/half.h"

namespace kiln::cpu {

namespace {

bool is_16bit(kiln_dtype d) { return d == KILN_BF16 || d == KILN_F16; }

uint64_t align64(uint64_t x) { return (x + 63) / 64 * 64; }

// Ops whose kernels read and write bf16/f16 storage themselves, converting
// as they go (the GEMM while packing, the losses and the attention
// softmax a row at a time): staging them would cost a whole f32 copy of
// the largest tensors (the logits, the attention scores).
bool converts_itself(kiln_op op) {
  switch (op) {
    case KILN_OP_CAST:
    case KILN_OP_CAST_FP8:
    case KILN_OP_MATMUL:
    case KILN_OP_CROSS_ENTROPY:
    case KILN_OP_CROSS_ENTROPY_GRAD:
    case KILN_OP_CAUSAL_SOFTMAX:
    case KILN_OP_DOCUMENT_SOFTMAX:
    case KILN_OP_ADAMW_CLIP:
    case KILN_OP_SUM_SQUARES:
    case KILN_OP_SOFTMAX_GRAD:
    case KILN_OP_DROPOUT:
    case KILN_OP_DROPOUT_KEYED:
    case KILN_OP_EMBEDDING:
    case KILN_OP_EMBEDDING_GRAD: return true;
    default: return converts_elementwise(op) || kiln_op_has(op, KILN_OPP_LAYOUT) != 0;
  }
}

}  // namespace

// From the table, so a new elementwise op needs no entry here: an
// elementwise op all of whose tensors are 'f' (DROPOUT's i32 key and
// ADAMW's f32 state are not; those two convert or need no converting).
bool converts_elementwise(kiln_op op) {
  const kiln_op_info* info = kiln_op_find(op);
  if (info == nullptr || (info->properties & KILN_OPP_ELEMENTWISE) == 0) return false;
  for (const char* sig : {info->inputs, info->outputs})
    for (const char* c = sig; *c != '\0'; ++c)
      if (*c == ':' && c[1] != 'f') return false;
  return true;
}

Staging plan_staging(const ir::DecodedGraph& g, const ir::DecodedNode& n) {
  Staging s;
  if (converts_itself(n.op)) return s;
  auto add = [&](uint32_t id, bool output) {
    const ir::DecodedValue& v = g.values[id];
    if (!is_16bit(v.dtype)) return;
    for (const StagedValue& already : s.values)
      if (already.id == id) return;  // an input read twice (ADD x + x)
    s.values.push_back({id, v.dtype, v.numel(), s.bytes, output});
    s.bytes += align64(static_cast<uint64_t>(v.numel()) * sizeof(float));
  };
  for (uint32_t id : n.inputs) add(id, false);
  for (uint32_t id : n.outputs) add(id, true);
  return s;
}

void stage_in(const Staging& s, uint8_t* area, void** addresses, std::vector<void*>* saved) {
  saved->resize(s.values.size());
  for (size_t i = 0; i < s.values.size(); ++i) {
    const StagedValue& v = s.values[i];
    auto* f32 = reinterpret_cast<float*>(area + v.offset);
    (*saved)[i] = addresses[v.id];
    if (!v.output) {
      const auto* h = static_cast<const uint16_t*>(addresses[v.id]);
      if (v.dtype == KILN_BF16)
        for (int64_t k = 0; k < v.numel; ++k) f32[k] = kiln_bf16_to_f32(h[k]);
      else
        for (int64_t k = 0; k < v.numel; ++k) f32[k] = kiln_f16_to_f32(h[k]);
    }
    addresses[v.id] = f32;
  }
}

void stage_out(const Staging& s, void** addresses, const std::vector<void*>& saved) {
  for (size_t i = 0; i < s.values.size(); ++i) {
    const StagedValue& v = s.values[i];
    if (v.output) {
      const auto* f32 = static_cast<const float*>(addresses[v.id]);
      auto* h = static_cast<uint16_t*>(saved[i]);
      if (v.dtype == KILN_BF16)
        for (int64_t k = 0; k < v.numel; ++k) h[k] = kiln_f32_to_bf16(f32[k]);
      else
        for (int64_t k = 0; k < v.numel; ++k) h[k] = kiln_f32_to_f16(f32[k]);
    }
    addresses[v.id] = saved[i];
  }
}

}  // namespace kiln::cpu
