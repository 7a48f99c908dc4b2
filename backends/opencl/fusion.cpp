#include "fusion.h"

#include <algorithm>
#include <set>

namespace kiln::ocl {
namespace {

// Bounds on one fused kernel: OpenCL guarantees only 1024 bytes of kernel
// parameters, and every tensor is a (pointer, offset) pair of 16 bytes.
constexpr size_t kMaxNodes = 32;
constexpr size_t kMaxTensors = 24;

struct Group {
  std::vector<uint32_t> nodes;
  int64_t count = 0;
  std::set<uint32_t> produced;
  // External reads: value -> read only at the kernel's index so far.
  std::vector<std::pair<uint32_t, bool>> reads;
};

bool overlaps(const ir::DecodedValue& a, const ir::DecodedValue& b) {
  return a.slot == b.slot && a.offset < b.offset + b.bytes() && b.offset < a.offset + a.bytes();
}

// A port written by the kernel may share memory with a port it reads only
// when both are the same elements at the same index: each work item then
// loads before it stores. Any other overlap would race between work items.
// (Arena values need no check: the plugin places every value a kernel
// touches in disjoint arena memory.)
bool hazard(const ir::DecodedGraph& g, const ir::DecodedValue& w, const ir::DecodedValue& r, bool r_at_index,
            int64_t count) {
  if (w.slot == 0 || !overlaps(w, r)) return false;
  const bool same_elements = w.offset == r.offset && w.numel() == count && r.numel() == count;
  (void)g;
  return !(same_elements && r_at_index);
}

bool can_join(const ir::DecodedGraph& g, const std::vector<NodeInfo>& info, const Group& grp, uint32_t ni) {
  const ir::DecodedNode& n = g.nodes[ni];
  if (grp.nodes.empty() || grp.count != info[ni].count || grp.nodes.size() >= kMaxNodes) return false;
  std::vector<std::pair<uint32_t, bool>> reads = grp.reads;
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    const uint32_t v = n.inputs[i];
    const bool at_index = reads_at_index(n, info[ni], i);
    if (grp.produced.count(v)) {
      // A value made in this kernel exists only at the work item's index.
      if (!at_index) return false;
      continue;
    }
    auto it = std::find_if(reads.begin(), reads.end(), [&](const auto& r) { return r.first == v; });
    if (it == reads.end())
      reads.emplace_back(v, at_index);
    else
      it->second = it->second && at_index;
  }
  if (reads.size() + grp.produced.size() + n.outputs.size() > kMaxTensors) return false;
  // Every port the kernel would write against every port it reads.
  std::vector<uint32_t> writes(grp.produced.begin(), grp.produced.end());
  writes.insert(writes.end(), n.outputs.begin(), n.outputs.end());
  for (uint32_t w : writes)
    for (const auto& [r, at_index] : reads)
      if (hazard(g, g.values[w], g.values[r], at_index, grp.count)) return false;
  return true;
}

void add(const ir::DecodedGraph& g, const std::vector<NodeInfo>& info, Group& grp, uint32_t ni) {
  const ir::DecodedNode& n = g.nodes[ni];
  if (grp.nodes.empty()) grp.count = info[ni].count;
  grp.nodes.push_back(ni);
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    const uint32_t v = n.inputs[i];
    if (grp.produced.count(v)) continue;
    const bool at_index = reads_at_index(n, info[ni], i);
    auto it = std::find_if(grp.reads.begin(), grp.reads.end(), [&](const auto& r) { return r.first == v; });
    if (it == grp.reads.end())
      grp.reads.emplace_back(v, at_index);
    else
      it->second = it->second && at_index;
  }
  for (uint32_t v : n.outputs) grp.produced.insert(v);
}

}  // namespace

bool is_fusible(const ir::DecodedGraph& g, const ir::DecodedNode& n) {
  // The op table's elementwise ops (each reads element k before writing it),
  // which codegen_elementwise.cpp writes as one expression per element.
  if (kiln_op_has(n.op, KILN_OPP_ELEMENTWISE)) return true;
  // Same elements in the same order: the identity inside a kernel.
  return n.op == KILN_OP_RESHAPE && g.values[n.inputs[0]].dtype == KILN_F32;
}

bool reads_at_index(const ir::DecodedNode& n, const NodeInfo& info, size_t input) {
  // b of ADD, MUL and MAXIMUM repeats as a suffix of a.
  if (kiln_op_table[n.op].rule == KILN_RULE_BROADCAST && input == 1) return info.bcast == info.count;
  if ((n.op == KILN_OP_ADAMW || n.op == KILN_OP_ADAMW_CLIP) && input >= 4) return false;       // hparams, clip
  if ((n.op == KILN_OP_DROPOUT || n.op == KILN_OP_DROPOUT_KEYED) && input == 1) return false;  // the key, read whole
  return true;
}

Fusion fuse(const ir::DecodedGraph& g, const std::vector<NodeInfo>& info) {
  Fusion f;
  std::vector<int> unit_of(g.nodes.size(), -1);
  Group grp;
  auto close = [&] {
    if (grp.nodes.empty()) return;
    Unit u;
    u.nodes = grp.nodes;
    // A reshape on its own is better as an alias or a copy than a kernel.
    u.elementwise = !(u.nodes.size() == 1 && g.nodes[u.nodes[0]].op == KILN_OP_RESHAPE);
    for (uint32_t ni : u.nodes) unit_of[ni] = static_cast<int>(f.units.size());
    f.units.push_back(std::move(u));
    grp = Group{};
  };
  for (uint32_t ni = 0; ni < g.nodes.size(); ++ni) {
    if (is_fusible(g, g.nodes[ni])) {
      if (!can_join(g, info, grp, ni)) close();
      add(g, info, grp, ni);
      continue;
    }
    close();
    unit_of[ni] = static_cast<int>(f.units.size());
    f.units.push_back(Unit{{ni}, false});
  }
  close();

  // A value stays in registers only if its fused kernel is its sole reader
  // and it is no graph output (ports live in slots >= 1).
  f.stored.assign(g.values.size(), true);
  std::vector<bool> outside(g.values.size(), false);
  for (uint32_t ni = 0; ni < g.nodes.size(); ++ni)
    for (uint32_t v : g.nodes[ni].inputs) {
      const int producer = g.values[v].producer;
      if (producer < 0 || unit_of[static_cast<size_t>(producer)] != unit_of[ni]) outside[v] = true;
    }
  for (const Unit& u : f.units) {
    if (!u.elementwise) continue;
    for (uint32_t ni : u.nodes)
      for (uint32_t v : g.nodes[ni].outputs) f.stored[v] = g.values[v].slot != 0 || outside[v];
  }
  return f;
}

}  // namespace kiln::ocl
