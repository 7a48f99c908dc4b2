#include "fusion.h"

#include <algorithm>

namespace kiln::vk {

namespace {

// elementwise.comp's ops but FILL (which reads nothing to chain from), and
// DROPOUT_KEYED (dropout.comp's mask, its key read whole).
bool fusible(kiln_op op) {
  switch (op) {
    case KILN_OP_ADD:
    case KILN_OP_MUL:
    case KILN_OP_SCALE:
    case KILN_OP_GELU:
    case KILN_OP_GELU_GRAD:
    case KILN_OP_SILU:
    case KILN_OP_SILU_GRAD:
    case KILN_OP_CLAMP:
    case KILN_OP_CLAMP_GRAD:
    case KILN_OP_GELU_ERF:
    case KILN_OP_GELU_ERF_GRAD:
    case KILN_OP_EXP:
    case KILN_OP_LOG:
    case KILN_OP_TANH:
    case KILN_OP_ERF:
    case KILN_OP_MAXIMUM:
    case KILN_OP_DROPOUT_KEYED: return true;
    default: return false;
  }
}

bool reads_b(kiln_op op) {
  return op == KILN_OP_ADD || op == KILN_OP_MUL || op == KILN_OP_MAXIMUM || op == KILN_OP_GELU_GRAD ||
         op == KILN_OP_SILU_GRAD || op == KILN_OP_GELU_ERF_GRAD || op == KILN_OP_CLAMP_GRAD ||
         op == KILN_OP_DROPOUT_KEYED;
}

bool overlaps(const ir::DecodedValue& a, const ir::DecodedValue& b) {
  return a.slot == b.slot && a.offset < b.offset + b.bytes() && b.offset < a.offset + a.bytes();
}

// Stage `node` reads the chain's running value `r` as its first operand
// (or, for ADD and MUL, which commute bit for bit, as its second, when the
// other is as large); returns its other operand in `b` (-1 if none).
bool continues(const backend::NodeInfo& p, const ir::DecodedNode& n, uint32_t r, int64_t& b) {
  if (!fusible(n.op)) return false;
  b = -1;
  if (!reads_b(n.op)) return n.inputs[0] == r;
  if (n.inputs[0] == n.inputs[1]) return false;  // r would be needed from memory too
  if (n.inputs[0] == r) {
    b = n.inputs[1];
    return true;
  }
  if (n.inputs[1] == r && (n.op == KILN_OP_ADD || n.op == KILN_OP_MUL) && p.bcast == p.count) {
    b = n.inputs[0];
    return true;
  }
  return false;
}

// Whether the chain's memory allows one dispatch: every invocation reads
// element i of each operand (of a broadcast one, i % its size) before it
// writes element i of each output, so an output may occupy only exactly a
// full-size operand's bytes (as an unfused in-place node's), and outputs
// never share bytes. And every binding fits a window.
bool fits(const ir::DecodedGraph& g, const backend::NodeInfo& first, const ElementwiseChain& c, uint64_t window_bytes) {
  const auto count = static_cast<uint64_t>(first.count);
  std::vector<uint32_t> outputs{g.nodes[c.nodes.back()].outputs[0]};
  for (size_t k = 0; k < c.values.size(); ++k)
    if (c.written[k]) outputs.push_back(c.values[k]);
  std::vector<bool> key(c.values.size(), false);  // a dropout stage's key, read whole
  for (size_t s = 0; s < c.nodes.size(); ++s)
    if (g.nodes[c.nodes[s]].op == KILN_OP_DROPOUT_KEYED) key[static_cast<size_t>(c.b_binding[s] - 1)] = true;
  for (size_t k = 0; k < c.values.size(); ++k) {
    const ir::DecodedValue& x = g.values[c.values[k]];
    const auto n = static_cast<uint64_t>(x.numel());
    if (x.bytes() > window_bytes || n == 0 || (!key[k] && count % n != 0)) return false;
    if (c.written[k]) continue;
    for (uint32_t o : outputs) {
      const ir::DecodedValue& y = g.values[o];
      const bool exact = x.slot == y.slot && x.offset == y.offset && x.bytes() == y.bytes() && n == count;
      if (overlaps(x, y) && !exact) return false;
    }
  }
  for (size_t a = 0; a < outputs.size(); ++a) {
    if (g.values[outputs[a]].bytes() > window_bytes) return false;
    for (size_t b = a + 1; b < outputs.size(); ++b)
      if (overlaps(g.values[outputs[a]], g.values[outputs[b]])) return false;
  }
  return true;
}

}  // namespace

std::vector<ElementwiseChain> elementwise_chains(const ir::DecodedGraph& g, const std::vector<backend::NodeInfo>& info,
                                                 uint64_t window_bytes) {
  std::vector<int> readers(g.values.size(), 0);
  for (const ir::DecodedNode& n : g.nodes)
    for (uint32_t v : n.inputs) ++readers[v];
  auto bind = [](ElementwiseChain& c, uint32_t v, bool written) {
    c.values.push_back(v);
    c.written.push_back(written);
    return static_cast<int>(c.values.size());
  };
  std::vector<ElementwiseChain> chains;
  for (size_t i = 0; i < g.nodes.size();) {
    ElementwiseChain c;
    if (fusible(g.nodes[i].op)) {
      bind(c, g.nodes[i].inputs[0], false);
      uint32_t r = g.nodes[i].inputs[0];
      for (size_t j = i; j < g.nodes.size() && c.nodes.size() < ElementwiseChain::kMaxStages; ++j) {
        int64_t b = -1;
        if (!continues(info[j], g.nodes[j], r, b)) break;
        // fused.comp pushes one dropout stage's numbers.
        const auto is_dropout = [&](uint32_t node) { return g.nodes[node].op == KILN_OP_DROPOUT_KEYED; };
        if (is_dropout(static_cast<uint32_t>(j)) && std::any_of(c.nodes.begin(), c.nodes.end(), is_dropout)) break;
        const bool stores_r = j > i && (g.values[r].slot != 0 || readers[r] > 1);
        if (j > i && info[j].count != info[i].count) break;
        // A stored intermediate read again as a later operand would be read
        // through another binding than it was written through.
        const int made_by = b >= 0 ? g.values[static_cast<uint32_t>(b)].producer : -1;
        if (made_by >= 0 && std::find(c.nodes.begin(), c.nodes.end(), static_cast<uint32_t>(made_by)) != c.nodes.end())
          break;
        const size_t need = (stores_r ? 1u : 0u) + (b >= 0 && std::find(c.values.begin(), c.values.end(),
                                                                        static_cast<uint32_t>(b)) == c.values.end());
        if (c.values.size() + need > ElementwiseChain::kMaxBindings) break;
        if (j > i) c.store_binding.push_back(stores_r ? bind(c, r, true) : 0);
        int b_at = 0;
        if (b >= 0) {
          const auto v = static_cast<uint32_t>(b);
          const auto it = std::find(c.values.begin(), c.values.end(), v);
          b_at = it != c.values.end() ? static_cast<int>(it - c.values.begin()) + 1 : bind(c, v, false);
        }
        c.nodes.push_back(static_cast<uint32_t>(j));
        c.b_binding.push_back(b_at);
        r = g.nodes[j].outputs[0];
      }
    }
    if (c.nodes.size() < 2 || !fits(g, info[i], c, window_bytes)) {
      ++i;
      continue;
    }
    i = c.nodes.back() + 1;
    chains.push_back(std::move(c));
  }
  return chains;
}

}  // namespace kiln::vk
