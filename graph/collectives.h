// The host side of the IR's collective op (ALL_REDUCE). A plugin never
// compiles a collective: the executor cuts the graph at it, runs the pieces
// on the device and performs the collective here, between them, on host
// copies of the tensor. The distributed trainer implements this over MPI
// for its tensor-parallel group (trainer/dist/); graphs without collectives
// never need one.
#pragma once

#include <span>

#include "graph/graph.h"

namespace kiln::graph {

class Collectives {
 public:
  virtual ~Collectives() = default;
  // In place: every rank of the group passes its tensor and gets back the
  // elementwise sum (or max) over the group. Every rank must call this for
  // the same collectives in the same order.
  virtual void all_reduce(std::span<float> data, Graph::Reduction reduction) = 0;
};

}  // namespace kiln::graph
