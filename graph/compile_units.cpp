#include "graph/compile_units.h"

#include <cstdlib>
#include <string>

#include "core/error.h"
#include "kiln/plugin.h"

namespace kiln::graph {

int32_t layer_forward_unit(int64_t layer) {
  if (layer < 0 || layer >= INT32_MAX - 1) throw Error("internal: layer " + std::to_string(layer) + " out of range");
  return static_cast<int32_t>(layer + 1);
}

// Negative labels: a layer's backward never collides with any forward unit.
int32_t backward_unit(int32_t forward_unit) { return -forward_unit; }

bool cut_into_units(const kiln_device_properties& device) {
  if (KILN_STRUCT_HAS(kiln_device_properties, &device, whole_graph_units) && device.whole_graph_units != 0)
    return false;
  const char* env = std::getenv("KILN_COMPILE_UNITS");
  if (env == nullptr || std::string(env).empty() || std::string(env) == "layers") return true;
  if (std::string(env) == "whole") return false;
  std::string message = "KILN_COMPILE_UNITS='";
  message += env;
  message += "' is not a compile-unit mode; use 'layers' (the default) or 'whole'";
  throw Error(message);
}

bool has_several_units(const Graph& g) {
  for (const Node& n : g.nodes())
    if (n.unit != g.nodes().front().unit) return true;
  return false;
}

std::vector<Segment> cut_at_units(const Graph& g, const std::vector<Segment>& segments) {
  std::vector<Segment> out;
  for (const Segment& s : segments) {
    int32_t current = 0;
    for (size_t k = 0; k < s.nodes.size(); ++k) {
      const int32_t unit = g.nodes()[static_cast<size_t>(s.nodes[k])].unit;
      if (k == 0 || unit != current) out.push_back({s.device, {}});
      current = unit;
      out.back().nodes.push_back(s.nodes[k]);
    }
  }
  return out;
}

}  // namespace kiln::graph
