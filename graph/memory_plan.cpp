#include "graph/memory_plan.h"

#include <algorithm>
#include <map>

#include "core/error.h"

namespace kiln::graph {

namespace {

uint64_t align_up(uint64_t x) { return (x + KILN_IR_ALIGN - 1) / KILN_IR_ALIGN * KILN_IR_ALIGN; }

uint64_t value_bytes(const Value& v) { return static_cast<uint64_t>(numel(v.shape)) * kiln_dtype_size(v.dtype); }

// Ops that read element k of every input before writing element k, so an
// output may occupy an input's memory (the op table's elementwise property).
bool is_elementwise(kiln_op op) { return kiln_op_has(op, KILN_OPP_ELEMENTWISE) != 0; }

struct Interval {
  int first, last;  // node indices, inclusive
  bool overlaps(const Interval& o) const { return first <= o.last && o.first <= last; }
};

}  // namespace

MemoryPlan plan_memory(const Graph& g) {
  const auto& values = g.values();
  const auto& nodes = g.nodes();
  const size_t nv = values.size();
  MemoryPlan plan;
  plan.slot.assign(nv, 0);
  plan.offset.assign(nv, 0);
  plan.slot_ports.push_back("");
  plan.slot_bytes.push_back(0);

  // Liveness over node indices: definition to last use.
  std::vector<int> last_use(nv, -1);
  for (size_t i = 0; i < nodes.size(); ++i)
    for (ValueId v : nodes[i].inputs) last_use[static_cast<size_t>(v)] = static_cast<int>(i);

  // Ports: each input its own slot; outputs their own slot unless they
  // update an input in place.
  std::vector<bool> bound(nv, false);
  std::map<std::string, uint32_t> input_slot;
  for (const Port& p : g.inputs()) {
    uint32_t s = static_cast<uint32_t>(plan.slot_ports.size());
    plan.slot_ports.push_back(p.name);
    plan.slot_bytes.push_back(value_bytes(g.value(p.value)));
    plan.slot[static_cast<size_t>(p.value)] = s;
    bound[static_cast<size_t>(p.value)] = true;
    input_slot[p.name] = s;
  }
  for (const Port& p : g.outputs()) {
    const Value& val = g.value(p.value);
    if (bound[static_cast<size_t>(p.value)])
      throw Error("graph: output '" + p.name + "' is an input or another output; ports need distinct values");
    if (val.producer < 0) throw Error("graph: output '" + p.name + "' is not computed by any node");
    uint32_t s;
    if (!p.updates.empty()) {
      s = input_slot.at(p.updates);
      const Port* in = g.find_input(p.updates);
      int writer = val.producer;
      if (last_use[static_cast<size_t>(in->value)] > writer)
        throw Error("graph: output '" + p.name + "' overwrites input '" + p.updates +
                    "' while later nodes still read it");
      const Node& w = nodes[static_cast<size_t>(writer)];
      bool reads_input = std::find(w.inputs.begin(), w.inputs.end(), in->value) != w.inputs.end();
      if (reads_input && !is_elementwise(w.op))
        throw Error(std::string("graph: output '") + p.name + "' cannot update '" + p.updates +
                    "' in place: " + op_name(w.op) + " is not elementwise");
    } else {
      s = static_cast<uint32_t>(plan.slot_ports.size());
      plan.slot_ports.push_back(p.name);
      plan.slot_bytes.push_back(value_bytes(val));
    }
    plan.slot[static_cast<size_t>(p.value)] = s;
    bound[static_cast<size_t>(p.value)] = true;
  }

  // Everything else a node produces lives in the arena. Best-fit by size,
  // largest first: a value may reuse space of values whose lifetimes do not
  // overlap its own.
  std::vector<ValueId> arena_values;
  std::vector<Interval> life(nv, Interval{0, -1});
  for (size_t i = 0; i < nodes.size(); ++i)
    for (ValueId v : nodes[i].outputs) {
      if (bound[static_cast<size_t>(v)]) continue;
      arena_values.push_back(v);
      life[static_cast<size_t>(v)] = {static_cast<int>(i),
                                      std::max(static_cast<int>(i), last_use[static_cast<size_t>(v)])};
    }
  // A RESHAPE of an arena value is the same bytes under another shape:
  // values are immutable, so it shares its input's storage and the pair
  // lives as long as either is in use. (Ports are excluded: a port's buffer
  // may be updated in place, which an alias would observe.)
  std::vector<ValueId> root(nv);
  for (size_t v = 0; v < nv; ++v) root[v] = static_cast<ValueId>(v);
  std::vector<bool> is_arena(nv, false);
  for (ValueId v : arena_values) is_arena[static_cast<size_t>(v)] = true;
  for (const Node& n : nodes) {
    if (n.op != KILN_OP_RESHAPE) continue;
    const auto out = static_cast<size_t>(n.outputs[0]), in = static_cast<size_t>(n.inputs[0]);
    if (!is_arena[out] || !is_arena[in]) continue;
    root[out] = root[in];
    Interval& lr = life[static_cast<size_t>(root[out])];
    lr.last = std::max(lr.last, life[out].last);
  }
  std::erase_if(arena_values, [&](ValueId v) { return root[static_cast<size_t>(v)] != v; });
  std::stable_sort(arena_values.begin(), arena_values.end(),
                   [&](ValueId a, ValueId b) { return value_bytes(g.value(a)) > value_bytes(g.value(b)); });
  struct Placed {
    uint64_t begin, end;
    Interval life;
  };
  std::vector<Placed> placed;
  for (ValueId v : arena_values) {
    const uint64_t size = align_up(std::max<uint64_t>(value_bytes(g.value(v)), 1));
    const Interval& lv = life[static_cast<size_t>(v)];
    std::vector<std::pair<uint64_t, uint64_t>> busy;
    for (const Placed& p : placed)
      if (p.life.overlaps(lv)) busy.emplace_back(p.begin, p.end);
    std::sort(busy.begin(), busy.end());
    // Smallest gap that fits (best fit), else the end.
    uint64_t best = UINT64_MAX, best_gap = UINT64_MAX, cursor = 0;
    for (const auto& [b, e] : busy) {
      if (b >= cursor + size && b - cursor < best_gap) {
        best = cursor;
        best_gap = b - cursor;
      }
      cursor = std::max(cursor, e);
    }
    if (best == UINT64_MAX) best = cursor;
    placed.push_back({best, best + size, lv});
    plan.offset[static_cast<size_t>(v)] = best;
    plan.arena_bytes = std::max(plan.arena_bytes, best + size);
  }
  for (size_t v = 0; v < nv; ++v)
    if (root[v] != static_cast<ValueId>(v)) plan.offset[v] = plan.offset[static_cast<size_t>(root[v])];
  plan.slot_bytes[0] = plan.arena_bytes;
  return plan;
}

}  // namespace kiln::graph
