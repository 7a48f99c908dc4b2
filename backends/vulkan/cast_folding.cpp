#include "cast_folding.h"

#include <algorithm>

namespace kiln::vk {
namespace {

bool is16(kiln_dtype dt) { return dt == KILN_BF16 || dt == KILN_F16; }

// Whether values a and b share a byte of one slot.
bool overlap(const ir::DecodedValue& a, const ir::DecodedValue& b) {
  return a.slot == b.slot && a.offset < b.offset + b.bytes() && b.offset < a.offset + a.bytes();
}

}  // namespace

CastFolds fold_widening_casts(const ir::DecodedGraph& g, const std::vector<bool>& in_chain) {
  CastFolds f;
  f.source_of.assign(g.values.size(), -1);
  f.folded.assign(g.nodes.size(), false);
  // Each value's readers (node indices, in order).
  std::vector<std::vector<size_t>> readers(g.values.size());
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (uint32_t v : g.nodes[i].inputs) readers[v].push_back(i);
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const ir::DecodedNode& n = g.nodes[i];
    if (n.op != KILN_OP_CAST || in_chain[i]) continue;
    const uint32_t src = n.inputs[0], dst = n.outputs[0];
    const ir::DecodedValue& from = g.values[src];
    const ir::DecodedValue& to = g.values[dst];
    if (!is16(from.dtype) || to.dtype != KILN_F32 || to.slot != 0) continue;  // slot 0: the arena, no port
    const std::vector<size_t>& r = readers[dst];
    if (r.empty()) continue;
    const bool gemms_only = std::all_of(r.begin(), r.end(), [&](size_t k) {
      const ir::DecodedNode& m = g.nodes[k];
      return m.op == KILN_OP_MATMUL;
    });
    if (!gemms_only) continue;
    // The source must still hold its values when the last reader runs, and
    // no reader may write over it either.
    bool kept = true;
    for (size_t k = i + 1; k <= r.back() && kept; ++k)
      for (uint32_t out : g.nodes[k].outputs) kept = kept && !overlap(g.values[out], from);
    if (!kept) continue;
    f.source_of[dst] = src;
    f.folded[i] = true;
  }
  return f;
}

}  // namespace kiln::vk
