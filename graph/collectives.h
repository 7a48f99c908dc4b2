// The host side of the IR's collective ops (ALL_REDUCE; sequence
// parallelism's ALL_GATHER, REDUCE_SCATTER and SCATTER). A plugin never
// compiles a collective: the executor cuts the graph at it, runs the pieces
// on the device and performs the collective here, between them, on host
// copies of the tensor. The distributed trainer implements this over MPI
// for its tensor-parallel group (trainer/dist/); graphs without collectives
// never need one.
#pragma once

#include <span>
#include <vector>

#include "graph/graph.h"

namespace kiln::graph {

class Collectives {
 public:
  virtual ~Collectives() = default;
  // In place: every rank of the group passes its tensor and gets back the
  // elementwise sum (or max) over the group. Every rank must call these
  // for the same collectives in the same order.
  virtual void all_reduce(std::span<float> data, Graph::Reduction reduction) = 0;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // Every rank passes `mine` (one size on all); `all` (size() times as
  // long) receives rank r's in block r. By default an all-reduce of
  // zero-padded blocks (exact: every element is one rank's plus zeros).
  virtual void all_gather(std::span<const float> mine, std::span<float> all);
  // Every rank passes `all` (size() blocks); `mine` receives block rank()
  // of their elementwise sum. By default an all-reduce of the whole.
  virtual void reduce_scatter(std::span<const float> all, std::span<float> mine);
};

// Runs host-collective node `node` of `g` on the elements of its input `x`
// (f32, as the op table types them), giving its output's in `y`: the
// all-reduce in place, the others moving rank r's part (one of R equal
// slices along the node's axis) in or out of R contiguous blocks.
void run_host_collective(const Graph& g, const Node& node, Collectives& group, std::span<float> x,
                         std::vector<float>& y);

}  // namespace kiln::graph
