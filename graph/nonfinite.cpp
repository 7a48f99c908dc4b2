#include "graph/nonfinite.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <set>
#include <vector>

#include "graph/compile_units.h"
#include "graph/passes.h"

namespace kiln::graph {

namespace {

// The graph input a value is, through ops that only change its dtype or
// layout (a parameter's 16-bit CAST, a reshape), or nullptr.
const Port* input_behind(const Graph& g, ValueId v) {
  for (;;) {
    const Value& value = g.value(v);
    if (value.producer < 0) {
      for (const Port& p : g.inputs())
        if (p.value == v) return &p;
      return nullptr;
    }
    const Node& n = g.nodes()[static_cast<size_t>(value.producer)];
    if (n.op != KILN_OP_CAST && n.op != KILN_OP_RESHAPE && n.op != KILN_OP_PERMUTE) return nullptr;
    v = n.inputs.at(0);
  }
}

// The output port a value becomes through its only reader, repeatedly, as
// long as that reader only converts it or adds to it (a parameter's
// gradient through the CAST back to f32 and the micro-batch sum), or nullptr.
const Port* output_ahead(const Graph& g, ValueId v) {
  for (size_t hops = 0; hops <= g.nodes().size(); ++hops) {
    for (const Port& p : g.outputs())
      if (p.value == v) return &p;
    const Node* reader = nullptr;
    for (const Node& n : g.nodes())
      if (std::find(n.inputs.begin(), n.inputs.end(), v) != n.inputs.end()) {
        if (reader != nullptr) return nullptr;
        reader = &n;
      }
    if (reader == nullptr || (reader->op != KILN_OP_CAST && reader->op != KILN_OP_RESHAPE &&
                              reader->op != KILN_OP_PERMUTE && reader->op != KILN_OP_ADD))
      return nullptr;
    v = reader->outputs.at(0);
  }
  return nullptr;
}

}  // namespace

std::string probe_port(size_t node, size_t output) { return fmt::format("nonfinite_probe.{}.{}", node, output); }

Graph with_finite_probes(const Graph& g) {
  Graph out = g;
  const size_t nodes = g.nodes().size();
  for (size_t i = 0; i < nodes; ++i) {
    const std::vector<ValueId> outputs = g.nodes()[i].outputs;  // add_node may move g's copy's nodes
    for (size_t k = 0; k < outputs.size(); ++k)
      if (kiln_dtype_is_float(out.value(outputs[k]).dtype))
        out.output(probe_port(i, k), out.sum_squares(out.scale(outputs[k], 0.0f)));
  }
  // Each probe right after the node whose value it reads, in that node's unit.
  return place_after_producers(out, nodes);
}

std::string describe_value(const Graph& g, ValueId v) {
  const Value& value = g.value(v);
  const std::string tensor = fmt::format("{} {}", kiln_dtype_name(value.dtype), to_string(value.shape));
  if (value.producer < 0) {
    const Port* p = input_behind(g, v);
    return fmt::format("input '{}' ({})", p ? p->name : "?", tensor);
  }
  const Node& n = g.nodes()[static_cast<size_t>(value.producer)];
  std::string s = fmt::format("{}: {}", unit_name(n.unit), op_name(n.op));
  if (n.outputs.size() > 1) s += fmt::format(" output {} of {}", value.output_index, n.outputs.size());
  s += " (" + tensor;
  std::set<std::string> seen;
  std::string reads;
  for (ValueId in : n.inputs)
    if (const Port* p = input_behind(g, in); p != nullptr && seen.insert(p->name).second)
      reads += (reads.empty() ? "" : ", ") + p->name;
  if (!reads.empty()) s += ", reading " + reads;
  if (const Port* p = output_ahead(g, v)) s += ", becoming " + (p->updates.empty() ? p->name : p->updates);
  return s + ")";
}

std::string first_non_finite(Executable& exe, Device& device, FallbackDevice* fallback, const ProcessGroups* groups) {
  const Graph& g = exe.graph();
  Executable probed(device, with_finite_probes(g), fallback);
  probed.set_process_groups(groups);
  for (const Port& p : g.inputs()) probed.bind(p.name, exe.buffer(p.name));
  for (const Port& p : g.outputs())
    if (p.updates.empty()) probed.bind(p.name, exe.buffer(p.name));
  probed.run();
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const std::vector<ValueId>& outputs = g.nodes()[i].outputs;
    for (size_t k = 0; k < outputs.size(); ++k) {
      if (!kiln_dtype_is_float(g.value(outputs[k]).dtype)) continue;
      float probe = 0;
      probed.buffer(probe_port(i, k))->read(&probe, sizeof probe);
      if (!std::isfinite(probe)) return describe_value(g, outputs[k]);
    }
  }
  return {};
}

}  // namespace kiln::graph
