// The executor's collectives (graph/collectives.h) over a process group:
// how a graph's ALL_REDUCE, ALL_GATHER and REDUCE_SCATTER nodes reach MPI
// for the group they name (Setup gives one per parallel dimension).
#pragma once

#include <string>
#include <utility>

#include "graph/collectives.h"
#include "trainer/dist/comm.h"

namespace kiln::trainer::dist {

class GroupCollectives : public graph::Collectives {
 public:
  // `what` names the group in a timeout's message ("tensor-parallel").
  GroupCollectives(Comm& group, std::string what) : group_(group), what_(std::move(what)) {}
  void all_reduce(std::span<float> data, graph::Graph::Reduction reduction) override {
    if (reduction == graph::Graph::Reduction::Max)
      group_.start_max(data);
    else
      group_.start_sum(data);
    group_.wait(what_ + " all-reduce");
  }
  int rank() const override { return group_.rank(); }
  int size() const override { return group_.size(); }
  void all_gather(std::span<const float> mine, std::span<float> all) override {
    group_.start_all_gather(mine, all);
    group_.wait(what_ + " all-gather");
  }
  void reduce_scatter(std::span<const float> all, std::span<float> mine) override {
    group_.start_reduce_scatter(all, mine);
    group_.wait(what_ + " reduce-scatter");
  }

 private:
  Comm& group_;
  std::string what_;
};

}  // namespace kiln::trainer::dist
