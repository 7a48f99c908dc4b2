// Data parallelism's one collective: after the local micro-batches, every
// rank's grad.<param> buffers hold its partial sums; this replaces them with
// the sum over all ranks, bucket by bucket (trainer/dist/gradient_buckets.h);
// each bucket's reduction starts as soon as it is read from the device, so
// reading the next bucket overlaps it. The caller scales by 1/(micro-batches x DP) in the optimizer.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trainer/dist/comm.h"
#include "trainer/dist/gradient_buckets.h"
#include "trainer/model/model_state.h"

namespace kiln::trainer::dist {

class GradientAllReduce {
 public:
  GradientAllReduce(Comm& comm, const ModelState& state, int64_t bucket_elements);
  // Reads the gradients and starts their reduction; the caller completes it
  // with comm.wait() (together with any other collective it started), then
  // finish() writes the sums back to the device.
  void start();
  void finish();
  size_t buckets() const { return buckets_.size(); }
  // --overlap-grad-reduce: backward has written the final values of these
  // grad.* ports; starts each bucket whose gradients are now all final
  // (last parameters first, as backward makes them). start() starts the rest.
  void start_ready(const std::vector<std::string>& ports);

 private:
  void start_bucket(size_t b);
  Comm& comm_;
  GradientBuckets buckets_;
  std::vector<DeviceBuffer*> grads_;      // grad.<param>, by parameter index
  std::vector<std::vector<float>> host_;  // per bucket: its gradients, concatenated
};

// Megatron's --check-weight-hash-across-dp-replicas-interval: a hash of
// every parameter's bytes, compared across ranks; throws kiln::Error naming
// the ranks that differ. at_start: the check every data-parallel job makes
// once the weights are initialised or loaded (as PyTorch DDP's broadcast
// makes them equal), silent when they agree.
void check_parameters_identical(Comm& comm, const ModelState& state, int64_t iteration, bool at_start = false);

}  // namespace kiln::trainer::dist
