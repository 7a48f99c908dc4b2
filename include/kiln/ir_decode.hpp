// Header-only decoder for the serialized IR described in kiln/ir.h.
//
// Part of the plugin SDK: a C++ plugin includes this instead of writing its
// own reader. It depends only on the standard library and validates every
// length and id against the buffer, so malformed bytes produce an error
// string, never an out-of-bounds read.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "kiln/ir.h"

namespace kiln::ir {

struct DecodedValue {
  kiln_dtype dtype = KILN_F32;
  std::vector<int64_t> dims;
  uint32_t slot = 0;
  uint64_t offset = 0;
  int producer = -1;  // node index, -1 for graph inputs

  int64_t numel() const {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    return n;
  }
  uint64_t bytes() const { return static_cast<uint64_t>(numel()) * kiln_dtype_size(dtype); }
};

struct DecodedNode {
  kiln_op op = KILN_OP_FILL;
  std::vector<uint32_t> inputs;
  std::vector<uint32_t> outputs;
  std::vector<int64_t> iattrs;
  std::vector<float> fattrs;
};

struct DecodedGraph {
  uint32_t num_slots = 0;
  uint64_t arena_bytes = 0;
  std::vector<DecodedValue> values;
  std::vector<DecodedNode> nodes;
};

// Most buffer slots a decoded graph may address.
inline constexpr uint32_t kMaxSlots = uint32_t{1} << 20;

namespace detail {
class Reader {
 public:
  Reader(const uint8_t* p, size_t n) : p_(p), n_(n) {}
  template <class T>
  bool get(T* out) {
    if (n_ - pos_ < sizeof(T) || pos_ > n_) return false;
    std::memcpy(out, p_ + pos_, sizeof(T));  // unaligned-safe
    pos_ += sizeof(T);
    return true;
  }
  bool done() const { return pos_ == n_; }

 private:
  const uint8_t* p_;
  size_t n_;
  size_t pos_ = 0;
};

// Whether two values share at least one byte.
inline bool overlaps(const DecodedValue& a, const DecodedValue& b) {
  if (a.slot != b.slot || a.bytes() == 0 || b.bytes() == 0) return false;
  return a.offset < b.offset + b.bytes() && b.offset < a.offset + a.bytes();
}

// ir.h's aliasing contract for one node: an output may occupy exactly an
// input's bytes when the op is elementwise (or a RESHAPE); any other sharing
// would let a kernel read what it has already overwritten (e.g. a loss
// gradient written over its own targets, then used as indices).
inline std::string check_node_memory(const DecodedGraph& g, const DecodedNode& n) {
  const bool may_alias = kiln_op_has(n.op, KILN_OPP_ELEMENTWISE) != 0 || n.op == KILN_OP_RESHAPE;
  for (size_t o = 0; o < n.outputs.size(); ++o) {
    const DecodedValue& y = g.values[n.outputs[o]];
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      const DecodedValue& x = g.values[n.inputs[i]];
      if (!overlaps(x, y)) continue;
      const bool exact = x.offset == y.offset && x.bytes() == y.bytes();
      if (may_alias && exact) continue;
      return "output " + std::to_string(o) + " overlaps input " + std::to_string(i) +
             (may_alias ? " without occupying exactly its bytes" : " and the op cannot work in place");
    }
    for (size_t p = 0; p < o; ++p)
      if (overlaps(g.values[n.outputs[p]], y))
        return "outputs " + std::to_string(p) + " and " + std::to_string(o) + " overlap";
  }
  return {};
}
}  // namespace detail

// Returns an empty string on success, else what is wrong with the bytes.
inline std::string decode(const uint8_t* bytes, size_t size, DecodedGraph* g) {
  detail::Reader r(bytes, size);
  char magic[8];
  for (char& c : magic)
    if (!r.get(&c)) return "IR truncated in header";
  if (std::memcmp(magic, "KILNIR\0\0", 8) != 0) return "IR has bad magic";
  uint32_t version = 0, num_values = 0, num_nodes = 0;
  if (!r.get(&version) || !r.get(&g->num_slots) || !r.get(&g->arena_bytes) || !r.get(&num_values) || !r.get(&num_nodes))
    return "IR truncated in header";
  if (version != KILN_IR_VERSION)
    return "IR version " + std::to_string(version) + " unsupported (want " + std::to_string(KILN_IR_VERSION) + ")";
  if (g->num_slots == 0) return "IR has no slots";
  // Slots take no bytes in the IR, but a plugin keeps per-slot state and a
  // host binds a buffer to each: cap them far above any real graph (one
  // slot per input/output port), so corrupt bytes cannot ask for billions.
  if (g->num_slots > kMaxSlots) return "IR has too many slots";
  // Each value is at least 16 bytes, each node at least 8: bound the
  // allocations by the input size before reserving.
  if (num_values > size / 16 || num_nodes > size / 8) return "IR counts exceed its size";
  g->values.assign(num_values, {});
  for (auto& v : g->values) {
    uint8_t dtype = 0, rank = 0;
    uint16_t reserved = 0;
    if (!r.get(&dtype) || !r.get(&rank) || !r.get(&reserved) || !r.get(&v.slot) || !r.get(&v.offset))
      return "IR truncated in values";
    if (kiln_dtype_size(dtype) == 0) return "IR value has unknown dtype " + std::to_string(dtype);
    if (rank > KILN_IR_MAX_RANK) return "IR value rank too large";
    if (v.slot >= g->num_slots) return "IR value slot out of range";
    v.dtype = static_cast<kiln_dtype>(dtype);
    v.dims.resize(rank);
    // The product of the non-zero dims is bounded as it is formed, so it
    // never overflows (here or in numel(), whose partial products it bounds).
    int64_t nonzero = 1;
    for (auto& d : v.dims) {
      if (!r.get(&d)) return "IR truncated in value dims";
      if (d < 0 || d > (int64_t{1} << 40)) return "IR value has an invalid dim";
      if (d == 0) continue;
      if (nonzero > (int64_t{1} << 40) / d) return "IR value too large";
      nonzero *= d;
    }
    // offset + bytes must not wrap around: a host binds buffers of that size.
    if (v.offset > UINT64_MAX - v.bytes()) return "IR value offset out of range";
    if (v.slot == 0 && v.offset + v.bytes() > g->arena_bytes) return "IR value lies outside the arena";
  }
  g->nodes.assign(num_nodes, {});
  for (size_t ni = 0; ni < g->nodes.size(); ++ni) {
    auto& n = g->nodes[ni];
    uint16_t op = 0, reserved = 0;
    uint8_t nin = 0, nout = 0, nia = 0, nfa = 0;
    if (!r.get(&op) || !r.get(&nin) || !r.get(&nout) || !r.get(&nia) || !r.get(&nfa) || !r.get(&reserved))
      return "IR truncated in nodes";
    if (op >= KILN_OP_COUNT_) return "IR node has unknown op " + std::to_string(op);
    n.op = static_cast<kiln_op>(op);
    n.inputs.resize(nin);
    n.outputs.resize(nout);
    n.iattrs.resize(nia);
    n.fattrs.resize(nfa);
    for (auto& x : n.inputs) {
      if (!r.get(&x)) return "IR truncated in node inputs";
      if (x >= num_values) return "IR node input id out of range";
    }
    for (auto& x : n.outputs) {
      if (!r.get(&x)) return "IR truncated in node outputs";
      if (x >= num_values) return "IR node output id out of range";
      if (g->values[x].producer != -1) return "IR value produced twice";
      g->values[x].producer = static_cast<int>(ni);
    }
    for (auto& x : n.iattrs)
      if (!r.get(&x)) return "IR truncated in node attributes";
    for (auto& x : n.fattrs)
      if (!r.get(&x)) return "IR truncated in node attributes";
  }
  if (!r.done()) return "IR has trailing bytes";
  for (size_t ni = 0; ni < g->nodes.size(); ++ni)
    for (uint32_t x : g->nodes[ni].inputs)
      if (g->values[x].producer >= static_cast<int>(ni)) return "IR nodes are not in topological order";
  for (size_t ni = 0; ni < g->nodes.size(); ++ni) {
    std::string e = detail::check_node_memory(*g, g->nodes[ni]);
    if (!e.empty()) return "IR node " + std::to_string(ni) + " (" + kiln_op_name(g->nodes[ni].op) + "): " + e;
  }
  return {};
}

}  // namespace kiln::ir
