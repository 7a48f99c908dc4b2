// The host side of the IR's collective ops (ALL_REDUCE; sequence
// parallelism's ALL_GATHER, REDUCE_SCATTER and SCATTER). A plugin never
// compiles a collective: the executor cuts the graph at it, runs the pieces
// on the device and performs the collective here, between them, on host
// copies of the tensor. Each collective node names its process group
// (kiln_group, its last int attribute); the executor looks the group up in
// the ProcessGroups the host gave it. The distributed trainer gives one per
// dimension of its ParallelState, over MPI (trainer/dist/); graphs without
// collectives never need one.
#pragma once

#include <array>
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

// The groups a run's collectives go over, by name. Not owning: each group
// must outlive the runs that use it.
class ProcessGroups {
 public:
  void set(kiln_group name, Collectives* group);
  // The group `node` names; throws a one-line kiln::Error naming the op and
  // the group when this run has none by that name.
  Collectives& of(const Node& node) const;
  bool empty() const;

 private:
  std::array<Collectives*, KILN_GROUP_COUNT_> groups_{};
};

// A group of this rank alone (a parallel dimension of size 1): every
// collective over it is the identity.
class SelfGroup : public Collectives {
 public:
  void all_reduce(std::span<float>, Graph::Reduction) override {}
  int rank() const override { return 0; }
  int size() const override { return 1; }
};

// Runs host-collective node `node` of `g` on the elements of its input `x`
// (f32, as the op table types them), over the group it names in `groups`,
// giving its output's in `y`: the all-reduce in place, the others moving
// rank r's part (one of R equal slices along the node's axis) in or out of
// R contiguous blocks.
void run_host_collective(const Graph& g, const Node& node, const ProcessGroups& groups, std::span<float> x,
                         std::vector<float>& y);

}  // namespace kiln::graph
