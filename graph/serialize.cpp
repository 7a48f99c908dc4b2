#include "graph/serialize.h"

#include <cstring>

#include "core/hash.h"

namespace kiln::graph {

namespace {
class Writer {
 public:
  template <class T>
  void put(T x) {
    uint8_t b[sizeof(T)];
    std::memcpy(b, &x, sizeof(T));  // the host is little-endian (x86-64, arm64)
    out.insert(out.end(), b, b + sizeof(T));
  }
  std::vector<uint8_t> out;
};
}  // namespace

std::vector<uint8_t> serialize(const Graph& g, const MemoryPlan& plan) {
  // Canonical ids: order of first appearance while walking the nodes, so
  // builder-internal ids (and any dead values) never affect the bytes.
  std::vector<int64_t> id(g.values().size(), -1);
  std::vector<ValueId> order;
  auto number = [&](ValueId v) {
    if (id[static_cast<size_t>(v)] < 0) {
      id[static_cast<size_t>(v)] = static_cast<int64_t>(order.size());
      order.push_back(v);
    }
  };
  for (const Node& n : g.nodes()) {
    for (ValueId v : n.inputs) number(v);
    for (ValueId v : n.outputs) number(v);
  }

  Writer w;
  for (char c : {'K', 'I', 'L', 'N', 'I', 'R', '\0', '\0'}) w.put(c);
  w.put<uint32_t>(KILN_IR_VERSION);
  w.put<uint32_t>(static_cast<uint32_t>(plan.slot_ports.size()));
  w.put<uint64_t>(plan.arena_bytes);
  w.put<uint32_t>(static_cast<uint32_t>(order.size()));
  w.put<uint32_t>(static_cast<uint32_t>(g.nodes().size()));
  for (ValueId v : order) {
    const Value& val = g.value(v);
    w.put<uint8_t>(static_cast<uint8_t>(val.dtype));
    w.put<uint8_t>(static_cast<uint8_t>(val.shape.size()));
    w.put<uint16_t>(0);
    w.put<uint32_t>(plan.slot[static_cast<size_t>(v)]);
    w.put<uint64_t>(plan.offset[static_cast<size_t>(v)]);
    for (int64_t d : val.shape) w.put<int64_t>(d);
  }
  for (const Node& n : g.nodes()) {
    w.put<uint16_t>(static_cast<uint16_t>(n.op));
    w.put<uint8_t>(static_cast<uint8_t>(n.inputs.size()));
    w.put<uint8_t>(static_cast<uint8_t>(n.outputs.size()));
    w.put<uint8_t>(static_cast<uint8_t>(n.iattrs.size()));
    w.put<uint8_t>(static_cast<uint8_t>(n.fattrs.size()));
    w.put<uint16_t>(0);
    for (ValueId v : n.inputs) w.put<uint32_t>(static_cast<uint32_t>(id[static_cast<size_t>(v)]));
    for (ValueId v : n.outputs) w.put<uint32_t>(static_cast<uint32_t>(id[static_cast<size_t>(v)]));
    for (int64_t a : n.iattrs) w.put<int64_t>(a);
    for (float f : n.fattrs) w.put<float>(f);
  }
  return std::move(w.out);
}

std::string graph_hash(const Graph& g) {
  std::vector<uint8_t> bytes = serialize(g, plan_memory(g));
  return sha256_hex(bytes.data(), bytes.size());
}

}  // namespace kiln::graph
