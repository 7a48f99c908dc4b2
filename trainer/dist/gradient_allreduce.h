// Data parallelism's one collective: after the local micro-batches, every
// rank's grad.<param> buffers hold its partial sums; this replaces them with
// the sum over all ranks. Gradients are packed into buckets of about
// --ddp-bucket-size elements so each MPI call moves a large message; each
// bucket's reduction starts as soon as it is read from the device, so
// reading the next bucket overlaps it. The caller scales by 1/(micro-batches x DP) in the optimizer.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "trainer/dist/comm.h"
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
  struct Slice {
    DeviceBuffer* buffer;
    size_t offset, count;  // in floats, within the bucket
  };
  struct Bucket {
    std::vector<Slice> slices;
    std::vector<float> host;
    size_t not_final = 0;  // slices backward has not finished this step
    bool started = false;
  };
  void start_bucket(Bucket& b);
  Comm& comm_;
  std::vector<Bucket> buckets_;
  std::map<std::string, size_t> bucket_of_;  // grad.* port -> its bucket
};

// Megatron's --check-weight-hash-across-dp-replicas-interval: a hash of
// every parameter's bytes, compared across ranks; throws kiln::Error naming
// the ranks that differ. at_start: the check every data-parallel job makes
// once the weights are initialised or loaded (as PyTorch DDP's broadcast
// makes them equal), silent when they agree.
void check_parameters_identical(Comm& comm, const ModelState& state, int64_t iteration, bool at_start = false);

}  // namespace kiln::trainer::dist
