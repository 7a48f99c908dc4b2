#include "graph/passes.h"

#include <algorithm>
#include <map>

#include "core/error.h"

namespace kiln::graph {

Graph eliminate_dead_code(const Graph& g) {
  std::vector<bool> live(g.values().size(), false);
  for (const Port& p : g.outputs()) live[static_cast<size_t>(p.value)] = true;
  std::vector<bool> keep(g.nodes().size(), false);
  for (size_t i = g.nodes().size(); i-- > 0;) {
    const Node& n = g.nodes()[i];
    for (ValueId v : n.outputs) keep[i] = keep[i] || live[static_cast<size_t>(v)];
    if (keep[i])
      for (ValueId v : n.inputs) live[static_cast<size_t>(v)] = true;
  }
  std::vector<Node> nodes;
  for (size_t i = 0; i < g.nodes().size(); ++i)
    if (keep[i]) nodes.push_back(g.nodes()[i]);
  Graph out = g;
  out.set_nodes(std::move(nodes));
  return out;
}

Graph remove_tp_copies(const Graph& g) {
  // source[v]: the value v stands for once the copies are gone.
  std::vector<ValueId> source(g.values().size());
  for (size_t v = 0; v < source.size(); ++v) source[v] = static_cast<ValueId>(v);
  std::vector<Node> nodes;
  for (const Node& n : g.nodes()) {
    Node kept = n;
    for (ValueId& v : kept.inputs) v = source[static_cast<size_t>(v)];
    if (n.op == KILN_OP_COPY_TO_TP_REGION) {
      source[static_cast<size_t>(n.outputs[0])] = kept.inputs[0];
      continue;
    }
    nodes.push_back(std::move(kept));
  }
  // A port keeps its value: one that names a copy would have to name the
  // copied value (perhaps a graph input) instead.
  for (const Port& p : g.outputs())
    if (source[static_cast<size_t>(p.value)] != p.value)
      throw Error("graph: output " + p.name +
                  " is a copy_to_tp_region value, which exists for autodiff only; output the value it copies");
  if (nodes.size() == g.nodes().size()) return g;
  Graph out = g;
  out.set_nodes(std::move(nodes));
  return out;
}

namespace {

// Whether node n is a CAST of a graph input.
bool casts_an_input(const Graph& g, const Node& n) { return n.op == KILN_OP_CAST && g.value(n.inputs[0]).producer < 0; }

}  // namespace

Graph rematerialize_input_casts(const Graph& g, size_t backward_begin) {
  const std::vector<Node>& nodes = g.nodes();
  Graph out = g;
  // Readers of every value, in node order.
  std::vector<std::vector<size_t>> readers(g.values().size());
  for (size_t i = 0; i < nodes.size(); ++i)
    for (ValueId v : nodes[i].inputs) readers[static_cast<size_t>(v)].push_back(i);
  std::vector<bool> is_graph_output(g.values().size(), false);
  for (const Port& p : g.outputs()) is_graph_output[static_cast<size_t>(p.value)] = true;

  std::multimap<size_t, Node> before;  // node index -> casts placed just before it
  std::vector<bool> moved(nodes.size(), false);
  std::vector<Node> rewired = nodes;
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& cast = nodes[i];
    const auto y = static_cast<size_t>(cast.outputs[0]);
    if (!casts_an_input(g, cast) || readers[y].empty() || is_graph_output[y]) continue;
    moved[i] = true;
    const std::vector<size_t>& r = readers[y];
    // Each copy joins the compile unit of the node it is placed before.
    Node forward_cast = cast;
    forward_cast.unit = nodes[r.front()].unit;
    before.emplace(r.front(), forward_cast);
    auto first_backward = std::lower_bound(r.begin(), r.end(), backward_begin);
    if (first_backward == r.begin() || first_backward == r.end()) continue;  // one side reads it: one copy
    // The backward's own copy: a new value, read by every backward reader.
    const ValueId copy = out.add_node(KILN_OP_CAST, cast.inputs, cast.iattrs, cast.fattrs)[0];
    Node backward_cast = out.nodes().back();
    backward_cast.unit = nodes[*first_backward].unit;
    before.emplace(*first_backward, backward_cast);
    for (auto it = first_backward; it != r.end(); ++it)
      for (ValueId& v : rewired[*it].inputs)
        if (v == cast.outputs[0]) v = copy;
  }
  std::vector<Node> order;
  order.reserve(nodes.size() + before.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    auto [lo, hi] = before.equal_range(i);
    for (auto it = lo; it != hi; ++it) order.push_back(it->second);
    if (!moved[i]) order.push_back(rewired[i]);
  }
  out.set_nodes(std::move(order));
  return out;
}

Graph place_after_producers(const Graph& g, size_t begin) {
  const std::vector<Node>& nodes = g.nodes();
  const size_t end = nodes.size();  // the anchor of nodes that read graph inputs only
  std::vector<size_t> anchor_of(g.values().size(), 0);
  std::vector<bool> made(g.values().size(), false);
  for (size_t i = 0; i < std::min(begin, end); ++i)
    for (ValueId v : nodes[i].outputs) anchor_of[static_cast<size_t>(v)] = i, made[static_cast<size_t>(v)] = true;
  // Equal keys keep insertion order, so a moved node that reads another
  // moved node's output follows it.
  std::multimap<size_t, Node> after;
  for (size_t i = begin; i < end; ++i) {
    size_t anchor = end;
    for (ValueId v : nodes[i].inputs)
      if (made[static_cast<size_t>(v)])
        anchor =
            anchor == end ? anchor_of[static_cast<size_t>(v)] : std::max(anchor, anchor_of[static_cast<size_t>(v)]);
    Node moved = nodes[i];
    if (anchor != end) moved.unit = nodes[anchor].unit;
    for (ValueId v : moved.outputs) {
      anchor_of[static_cast<size_t>(v)] = anchor;
      made[static_cast<size_t>(v)] = anchor != end;
    }
    after.emplace(anchor, moved);
  }
  std::vector<Node> order;
  order.reserve(end);
  for (size_t i = 0; i <= end; ++i) {
    if (i < std::min(begin, end)) order.push_back(nodes[i]);
    auto [lo, hi] = after.equal_range(i);
    for (auto it = lo; it != hi; ++it) order.push_back(it->second);
  }
  Graph out = g;
  out.set_nodes(std::move(order));
  return out;
}

}  // namespace kiln::graph
