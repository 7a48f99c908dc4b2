// The executor's collectives (graph/collectives.h) over a process group:
// how a graph's ALL_REDUCE nodes reach MPI for the tensor-parallel group.
#pragma once

#include "graph/collectives.h"
#include "trainer/dist/comm.h"

namespace kiln::trainer::dist {

class GroupCollectives : public graph::Collectives {
 public:
  explicit GroupCollectives(Comm& group) : group_(group) {}
  void all_reduce(std::span<float> data, graph::Graph::Reduction reduction) override {
    if (reduction == graph::Graph::Reduction::Max)
      group_.start_max(data);
    else
      group_.start_sum(data);
    group_.wait("tensor-parallel all-reduce");
  }

 private:
  Comm& group_;
};

}  // namespace kiln::trainer::dist
