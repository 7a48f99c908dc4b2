#include "graph/partition.h"

#include <algorithm>
#include <functional>
#include <map>
#include <queue>

#include "core/error.h"

namespace kiln::graph {

std::vector<Segment> partition(const Graph& g, const std::vector<int>& device_of_node) {
  const auto& nodes = g.nodes();
  const size_t n = nodes.size();
  if (device_of_node.size() != n) throw Error("partition: one device per node expected");

  // Edges: producer -> consumer, and for an output that updates an input in
  // place, every other reader of that input -> the writer (the write must
  // not overtake a read of the old contents).
  std::vector<std::vector<int>> succ(n);
  std::vector<int> indegree(n, 0);
  auto edge = [&](int from, int to) {
    succ[static_cast<size_t>(from)].push_back(to);
    ++indegree[static_cast<size_t>(to)];
  };
  std::vector<std::vector<int>> readers(g.values().size());
  for (size_t i = 0; i < n; ++i)
    for (ValueId v : nodes[i].inputs) {
      readers[static_cast<size_t>(v)].push_back(static_cast<int>(i));
      if (int p = g.value(v).producer; p >= 0) edge(p, static_cast<int>(i));
    }
  for (const Port& out : g.outputs()) {
    if (out.updates.empty()) continue;
    const Port* in = g.find_input(out.updates);
    const int writer = g.value(out.value).producer;
    if (!in || writer < 0) continue;
    for (int r : readers[static_cast<size_t>(in->value)])
      if (r != writer) edge(r, writer);
  }

  // List scheduling: keep taking ready nodes of the current device (lowest
  // original index first, so a one-device graph keeps its order) and switch
  // devices only when the current one has nothing ready: first to the host
  // aliases that are ready (they cost nothing, and may be what the current
  // device waits for), else to the device whose next ready node comes first
  // in the original order.
  using MinHeap = std::priority_queue<int, std::vector<int>, std::greater<int>>;
  std::vector<MinHeap> ready(static_cast<size_t>(kMaxDevices));
  auto queue_of = [&](int node) -> MinHeap& {
    const int d = device_of_node[static_cast<size_t>(node)];
    if (d < 0 || d >= kMaxDevices) throw Error("partition: device " + std::to_string(d) + " out of range");
    return ready[static_cast<size_t>(d)];
  };
  for (size_t i = 0; i < n; ++i)
    if (indegree[i] == 0) queue_of(static_cast<int>(i)).push(static_cast<int>(i));
  std::vector<Segment> segments;
  int current = -1;
  for (size_t scheduled = 0; scheduled < n; ++scheduled) {
    if (current < 0 || ready[static_cast<size_t>(current)].empty()) {
      int next = ready[static_cast<size_t>(kHostAlias)].empty() ? -1 : kHostAlias;
      for (int d = 0; d < kMaxDevices && next != kHostAlias; ++d)
        if (!ready[static_cast<size_t>(d)].empty() &&
            (next < 0 || ready[static_cast<size_t>(d)].top() < ready[static_cast<size_t>(next)].top()))
          next = d;
      if (next < 0) throw Error("partition: the graph's in-place updates leave no valid node order");
      current = next;
      segments.push_back({current, {}});
    }
    MinHeap& here = ready[static_cast<size_t>(current)];
    const int node = here.top();
    here.pop();
    segments.back().nodes.push_back(node);
    for (int s : succ[static_cast<size_t>(node)])
      if (--indegree[static_cast<size_t>(s)] == 0) queue_of(s).push(s);
  }
  return segments;
}

std::vector<SegmentGraph> extract_segments(const Graph& g, const std::vector<Segment>& segments) {
  const auto& nodes = g.nodes();
  const size_t nv = g.values().size();
  std::vector<int> segment_of(nodes.size(), -1);
  for (size_t s = 0; s < segments.size(); ++s)
    for (int i : segments[s].nodes) segment_of[static_cast<size_t>(i)] = static_cast<int>(s);

  // A value leaves its segment if a node of another segment reads it.
  std::vector<bool> crosses(nv, false);
  for (size_t i = 0; i < nodes.size(); ++i)
    for (ValueId v : nodes[i].inputs)
      if (int p = g.value(v).producer; p >= 0 && segment_of[static_cast<size_t>(p)] != segment_of[i])
        crosses[static_cast<size_t>(v)] = true;
  std::map<ValueId, const Port*> input_port, output_port;
  for (const Port& p : g.inputs()) input_port[p.value] = &p;
  for (const Port& p : g.outputs()) output_port[p.value] = &p;
  auto internal_name = [](ValueId v) {
    std::string name = "%";  // appended, not operator+: GCC 12 warns falsely on "%" + string
    return name.append(std::to_string(v));
  };
  for (const auto* ports : {&g.inputs(), &g.outputs()})
    for (const Port& p : *ports)
      if (p.name.starts_with("%"))
        throw Error("graph port '" + p.name + "': names starting with '%' are reserved for split graphs");

  std::vector<SegmentGraph> out;
  for (size_t s = 0; s < segments.size(); ++s) {
    SegmentGraph sg;
    std::map<ValueId, ValueId> local;  // original -> segment graph
    auto add_input = [&](ValueId v) {
      if (local.count(v)) return;
      auto it = input_port.find(v);
      const std::string name = it != input_port.end() ? it->second->name : internal_name(v);
      local[v] = sg.graph.input(name, g.value(v).dtype, g.shape(v));
      sg.inputs.emplace_back(name, v);
    };
    // Values read here but made elsewhere, then inputs updated in place by
    // an output made here (the update needs the input as a port).
    std::vector<bool> made_here(nv, false);
    for (int i : segments[s].nodes)
      for (ValueId v : nodes[static_cast<size_t>(i)].outputs) made_here[static_cast<size_t>(v)] = true;
    for (int i : segments[s].nodes)
      for (ValueId v : nodes[static_cast<size_t>(i)].inputs)
        if (!made_here[static_cast<size_t>(v)]) add_input(v);
    for (const Port& p : g.outputs())
      if (!p.updates.empty() && made_here[static_cast<size_t>(p.value)]) add_input(g.find_input(p.updates)->value);

    for (int i : segments[s].nodes) {
      const Node& node = nodes[static_cast<size_t>(i)];
      std::vector<ValueId> in;
      for (ValueId v : node.inputs) in.push_back(local.at(v));
      // Shapes that are attributes (RESHAPE, SUM_TO, FILL) come from the
      // original outputs; other ops infer the same shapes again.
      std::vector<Shape> shapes;
      for (ValueId v : node.outputs) shapes.push_back(g.shape(v));
      std::vector<ValueId> made = sg.graph.add_node(node.op, in, node.iattrs, node.fattrs, shapes);
      for (size_t k = 0; k < made.size(); ++k) local[node.outputs[k]] = made[k];
    }
    for (int i : segments[s].nodes)
      for (ValueId v : nodes[static_cast<size_t>(i)].outputs) {
        auto it = output_port.find(v);
        if (it != output_port.end()) {
          sg.graph.output(it->second->name, local.at(v), it->second->updates);
          sg.outputs.emplace_back(it->second->name, v);
        } else if (crosses[static_cast<size_t>(v)]) {
          sg.graph.output(internal_name(v), local.at(v));
          sg.outputs.emplace_back(internal_name(v), v);
        }
      }
    out.push_back(std::move(sg));
  }
  return out;
}

}  // namespace kiln::graph
