// Activation recomputation (Megatron's activation checkpointing) as a
// rewrite at autodiff time.
//
// A segment is a range of forward nodes whose values are not kept for the
// backward pass. When backward() first needs a gradient rule of a node in a
// segment, it appends a copy of the whole segment's forward nodes, reading
// the same inputs from outside the segment (the kept inputs), and every
// rule of the segment then reads the copies' values. The originals' last
// reader is then in the forward, so the memory planner (liveness-based)
// frees them there and the copies live only during the segment's backward.
// A copy computes exactly what the original did (same op, inputs and
// attributes; DROPOUT's mask is a function of its key and attributes,
// docs/DROPOUT.md), so gradients are bitwise those without recomputation.
#pragma once

#include <vector>

#include "graph/graph.h"

namespace kiln::graph {

// Forward nodes [first_node, end_node) of the graph backward() is given.
struct RecomputeSegment {
  int first_node = 0;
  int end_node = 0;
};

// Replays segments for backward() (graph/autodiff.cpp).
class Recomputation {
 public:
  // Throws kiln::Error if a segment is empty, reaches past the forward
  // nodes, or overlaps another.
  Recomputation(std::vector<RecomputeSegment> segments, size_t num_forward_nodes, size_t num_values);

  // The node the gradient rule of forward node `index` should read: the
  // node itself outside every segment, else its copy, with the segment
  // replayed (appended to g) on the first such call.
  Node node_for_gradient(Graph& g, int index);

 private:
  const RecomputeSegment* segment_of(int index) const;
  void replay(Graph& g, const RecomputeSegment& s);

  std::vector<RecomputeSegment> segments_;  // sorted by first_node
  std::vector<bool> replayed_;              // per segment
  std::vector<ValueId> copy_of_;            // original value -> its recomputed copy (-1: none)
};

}  // namespace kiln::graph
