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

// Labels above every forward label (a layer number stays far below 2^30).
constexpr int32_t kParameterUnitBase = 1 << 30;

int32_t layer_parameter_unit(int64_t layer) {
  if (layer < 0 || layer >= kParameterUnitBase - 1)
    throw Error("internal: layer " + std::to_string(layer) + " out of range");
  return kParameterUnitBase + static_cast<int32_t>(layer);
}

const char* unit_kind(int32_t unit) {
  if (unit == kRestUnit) return "outside the layers";
  if (unit >= kParameterUnitBase) return "layer parameters";
  return unit > 0 ? "layer forward" : "layer backward";
}

int64_t parameter_layer(const std::string& name) {
  static const std::string kPrefix = "decoder.layers.";
  if (name.rfind(kPrefix, 0) != 0) return -1;
  size_t end = kPrefix.size();
  int64_t layer = 0;
  while (end < name.size() && name[end] >= '0' && name[end] <= '9' && layer < kParameterUnitBase)
    layer = layer * 10 + (name[end++] - '0');
  if (end == kPrefix.size() || end >= name.size() || name[end] != '.') return -1;
  return layer;
}

std::string unit_name(int32_t unit) {
  if (unit == kRestUnit) return "outside the layers";
  if (unit >= kParameterUnitBase) return "layer " + std::to_string(unit - kParameterUnitBase) + " parameters";
  if (unit > 0) return "layer " + std::to_string(unit - 1) + " forward";
  return "layer " + std::to_string(-static_cast<int64_t>(unit) - 1) + " backward";
}

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
