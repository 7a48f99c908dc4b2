#include "graph/recompute.h"

#include <algorithm>
#include <string>

#include "core/error.h"

namespace kiln::graph {

Recomputation::Recomputation(std::vector<RecomputeSegment> segments, size_t num_forward_nodes, size_t num_values)
    : segments_(std::move(segments)), replayed_(segments_.size(), false), copy_of_(num_values, -1) {
  std::sort(segments_.begin(), segments_.end(),
            [](const RecomputeSegment& a, const RecomputeSegment& b) { return a.first_node < b.first_node; });
  int previous_end = 0;
  for (const RecomputeSegment& s : segments_) {
    std::string what = "autodiff: recompute segment of nodes [";  // built with += (GCC 12's false -Wrestrict)
    what += std::to_string(s.first_node);
    what += ", ";
    what += std::to_string(s.end_node);
    what += ")";
    if (s.first_node < 0 || s.end_node <= s.first_node || static_cast<size_t>(s.end_node) > num_forward_nodes) {
      what += " is empty or not within the ";
      what += std::to_string(num_forward_nodes);
      what += " forward nodes";
      throw Error(what);
    }
    if (s.first_node < previous_end) {
      what += " overlaps another; segments must be disjoint";
      throw Error(what);
    }
    previous_end = s.end_node;
  }
}

const RecomputeSegment* Recomputation::segment_of(int index) const {
  auto it = std::upper_bound(segments_.begin(), segments_.end(), index,
                             [](int i, const RecomputeSegment& s) { return i < s.first_node; });
  if (it == segments_.begin()) return nullptr;
  --it;
  return index < it->end_node ? &*it : nullptr;
}

void Recomputation::replay(Graph& g, const RecomputeSegment& s) {
  for (int i = s.first_node; i < s.end_node; ++i) {
    const Node original = g.nodes()[static_cast<size_t>(i)];  // copy: add_node may move the storage
    std::vector<ValueId> inputs;
    for (ValueId v : original.inputs) {
      const ValueId copy = copy_of_[static_cast<size_t>(v)];
      inputs.push_back(copy >= 0 ? copy : v);  // produced before the segment: kept, read as is
    }
    // FILL, RESHAPE and SUM_TO take their output shapes from the caller (the
    // op rules ignore them for the other ops).
    std::vector<Shape> shapes;
    for (ValueId v : original.outputs) shapes.push_back(g.shape(v));
    const std::vector<ValueId> outputs = g.add_node(original.op, inputs, original.iattrs, original.fattrs, shapes);
    for (size_t o = 0; o < outputs.size(); ++o) copy_of_[static_cast<size_t>(original.outputs[o])] = outputs[o];
  }
}

Node Recomputation::node_for_gradient(Graph& g, int index) {
  Node node = g.nodes()[static_cast<size_t>(index)];
  const RecomputeSegment* s = segment_of(index);
  if (!s) return node;
  const size_t k = static_cast<size_t>(s - segments_.data());
  if (!replayed_[k]) {
    replay(g, *s);
    replayed_[k] = true;
  }
  for (ValueId& v : node.inputs)
    if (copy_of_[static_cast<size_t>(v)] >= 0) v = copy_of_[static_cast<size_t>(v)];
  for (ValueId& v : node.outputs) v = copy_of_[static_cast<size_t>(v)];
  return node;
}

}  // namespace kiln::graph
