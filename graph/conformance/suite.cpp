#include "graph/conformance/suite.h"

#include <map>
#include <utility>

#include "core/error.h"
#include "graph/conformance/op_cases.h"

namespace kiln::conformance {

Suite Suite::builtin() {
  Suite s;
  add_elementwise_cases(s);
  add_linear_cases(s);
  add_layout_cases(s);
  add_vocab_parallel_cases(s);
  add_rotary_cases(s);
  add_dropout_cases(s);
  add_cast_cases(s);
  add_fp8_cases(s);
  add_math_cases(s);
  add_composite_cases(s);
  add_low_precision_cases(s);
  return s;
}

namespace {

std::multimap<std::string, std::function<void(Suite&)>>& backend_cases() {
  static std::multimap<std::string, std::function<void(Suite&)>> registered;
  return registered;
}

}  // namespace

void register_backend_cases(const std::string& backend, std::function<void(Suite&)> add) {
  backend_cases().emplace(backend, std::move(add));
}

Suite Suite::for_backend(const std::string& backend) {
  Suite s = builtin();
  auto [first, last] = backend_cases().equal_range(backend);
  for (auto it = first; it != last; ++it) it->second(s);
  return s;
}

bool is_host_collective(kiln_op op) { return kiln_op_has(op, KILN_OPP_HOST_COLLECTIVE) != 0; }

void Suite::add(Case c) {
  for (const graph::Node& n : c.graph.nodes())
    if (is_host_collective(n.op))
      throw Error("conformance case '" + c.name + "': " + graph::op_name(n.op) +
                  " is a host collective; the suite runs graphs on one device, where no plugin ever receives it");
  for (const Case& other : cases_)
    if (other.name == c.name) throw Error("conformance suite: two cases named '" + c.name + "'");
  cases_.push_back(std::move(c));
}

void Suite::add_case(const std::string& name, graph::Graph graph, double threshold, graph::TensorMap inputs) {
  CaseRng rng(static_cast<uint32_t>(cases_.size()) + 7919u);
  for (const graph::Port& p : graph.inputs()) {
    if (inputs.count(p.name)) continue;
    const graph::Value& v = graph.value(p.value);
    if (v.dtype != KILN_F32)
      throw Error("conformance case '" + name + "': give a value for i32 input '" + p.name +
                  "' (its valid range depends on the graph)");
    inputs[p.name] = rng.uniform(v.shape, -1.0f, 1.0f);
  }
  Case c;
  c.group = name;
  c.name = name;
  c.graph = std::move(graph);
  c.inputs = std::move(inputs);
  c.threshold = threshold;
  c.fallback = true;
  add(std::move(c));
}

}  // namespace kiln::conformance
