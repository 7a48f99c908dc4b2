// How data parallelism groups the gradients for its collectives, whichever
// collective it is (the all-reduce, or the distributed optimizer's
// reduce-scatter and all-gather): Megatron's buckets. Parameters are taken
// last first, as backward produces their gradients, and a bucket closes
// once it holds about --ddp-bucket-size elements, so each MPI call moves a
// large message.
//
// With --overlap-grad-reduce, backward reports the grad.* ports whose values
// are final (graph::Executable::run's OutputsReady); a bucket can start as
// soon as every gradient in it is final, while the earlier layers' backward
// still runs. This class keeps that count; its owner moves the data.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "trainer/model/model_state.h"

namespace kiln::trainer::dist {

class GradientBuckets {
 public:
  GradientBuckets(const std::vector<ParamSpec>& params, int64_t bucket_elements);

  size_t size() const { return buckets_.size(); }
  // Bucket b's parameters, as indices into the params given, last first.
  const std::vector<size_t>& members(size_t b) const { return buckets_[b].members; }
  // Bucket b's elements: the sum of its parameters' (local) sizes.
  size_t elements(size_t b) const { return buckets_[b].elements; }

  // Backward has written the final values of these ports this step (ports
  // that are not gradients, and ports already reported, are ignored).
  // Returns the buckets that are now complete and not yet started, and
  // marks them started.
  std::vector<size_t> complete(const std::vector<std::string>& ports);
  // The buckets not started yet, marked started; `early` counts those that
  // were started by complete() this step.
  std::vector<size_t> remaining(size_t* early);
  // A new step: nothing final, nothing started.
  void reset();

 private:
  struct Bucket {
    std::vector<size_t> members;
    size_t elements = 0;
    size_t not_final = 0;  // members whose gradient backward has not finished this step
    bool started = false;
  };
  std::vector<Bucket> buckets_;
  std::map<std::string, size_t> bucket_of_;  // grad.* port -> its bucket
  std::set<std::string> final_;              // grad.* ports reported final this step
};

}  // namespace kiln::trainer::dist
