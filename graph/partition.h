// Splitting a graph between the devices that run it: the primary backend,
// the CPU backend for the ops the primary lacks (plugin.h's op_supported),
// and the host for collectives (graph/collectives.h).
//
// partition() reorders the nodes (any order that respects data dependences
// and in-place write-after-read is valid) so that each device's nodes form
// as few contiguous runs as possible, then cuts the order into maximal
// single-device segments. Host aliases are taken only where the current
// device has nothing ready, so they cut no run that could go on. extract_segments() turns each segment into a graph
// of its own whose ports are the values crossing its boundary, so each piece
// compiles through the ordinary single-device path.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "graph/graph.h"

namespace kiln::graph {

// Node classes: where a segment's nodes run.
constexpr int kPrimaryDevice = 0;   // the backend the graph was built for
constexpr int kFallbackDevice = 1;  // the CPU backend, for ops the primary lacks
constexpr int kHostCollective = 2;  // collectives (ALL_REDUCE), run by the host
// RESHAPEs the executor resolves as views: the output is the input's bytes
// under another shape, so no device runs them (graph/executor.h).
constexpr int kHostAlias = 3;
constexpr int kMaxDevices = 4;

struct Segment {
  int device = 0;          // one of the classes above
  std::vector<int> nodes;  // indices into the graph's nodes, in run order
};

// device_of_node[i] is node i's class (above). Throws if the graph's in-place
// updates leave no valid order (they never do for a graph the memory planner
// accepts).
std::vector<Segment> partition(const Graph& g, const std::vector<int>& device_of_node);

// A segment as a standalone graph. Its ports are named after the original
// graph's ports where a value is one (an in-place output keeps its
// `updates`, and the updated input becomes a port of the segment too), and
// "%<value id>" for values that only cross between segments.
struct SegmentGraph {
  Graph graph;
  std::vector<std::pair<std::string, ValueId>> inputs;   // port name -> original value
  std::vector<std::pair<std::string, ValueId>> outputs;  // port name -> original value
};
std::vector<SegmentGraph> extract_segments(const Graph& g, const std::vector<Segment>& segments);

}  // namespace kiln::graph
