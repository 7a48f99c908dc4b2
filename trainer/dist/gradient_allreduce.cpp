#include "trainer/dist/gradient_allreduce.h"

#include <algorithm>
#include <cstdio>

#include "core/error.h"
#include "core/log.h"
#include "trainer/model/step_graphs.h"

namespace kiln::trainer::dist {

GradientAllReduce::GradientAllReduce(Comm& comm, const ModelState& state, int64_t bucket_elements)
    : comm_(comm), buckets_(state.params(), bucket_elements) {
  for (const ParamSpec& p : state.params()) grads_.push_back(&state.buffer(grad_name(p.name)));
  for (size_t b = 0; b < buckets_.size(); ++b) host_.emplace_back(buckets_.elements(b));
}

// The gradients are f32 accumulators whatever the compute dtype.
void GradientAllReduce::start_bucket(size_t b) {
  float* at = host_[b].data();
  for (size_t i : buckets_.members(b)) {
    grads_[i]->read(at, grads_[i]->size());
    at += grads_[i]->size() / sizeof(float);
  }
  comm_.start_sum(host_[b]);
}

void GradientAllReduce::start_ready(const std::vector<std::string>& ports) {
  if (comm_.size() == 1) return;
  for (size_t b : buckets_.complete(ports)) start_bucket(b);
}

void GradientAllReduce::start() {
  if (comm_.size() == 1) return;
  size_t early = 0;
  for (size_t b : buckets_.remaining(&early)) start_bucket(b);
  if (early > 0)
    logger().debug("gradient all-reduce: {} of {} buckets started during backward", early, buckets_.size());
}

void GradientAllReduce::finish() {
  if (comm_.size() == 1) return;
  for (size_t b = 0; b < buckets_.size(); ++b) {
    const float* at = host_[b].data();
    for (size_t i : buckets_.members(b)) {
      grads_[i]->write(at, grads_[i]->size());
      at += grads_[i]->size() / sizeof(float);
    }
  }
  buckets_.reset();
}

namespace {
// FNV-1a over the bytes: any bit that differs changes the hash.
uint64_t fnv1a(const unsigned char* p, size_t n, uint64_t h) {
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}
}  // namespace

void check_parameters_identical(Comm& comm, const ModelState& state, int64_t iteration, bool at_start) {
  uint64_t h = 0xcbf29ce484222325ull;
  std::vector<unsigned char> bytes;
  for (const ParamSpec& p : state.params()) {
    DeviceBuffer& buf = state.buffer(p.name);
    bytes.resize(buf.size());
    buf.read(bytes.data(), bytes.size());
    h = fnv1a(bytes.data(), bytes.size(), h);
  }
  std::vector<uint64_t> all = comm.all_gather(h, "parameter hash all-gather");
  std::string differ;
  for (size_t r = 1; r < all.size(); ++r)
    if (all[r] != all[0]) differ += (differ.empty() ? "" : ", ") + std::to_string(r);
  // The flags are known to agree (check_same_flags), so at the start the
  // likely cause is what the ranks read; later it is kiln's all-reduce.
  if (!differ.empty())
    throw Error("parameters differ across data-parallel ranks " +
                (at_start ? std::string("at start-up (iteration ") + std::to_string(iteration) + ")"
                          : "at iteration " + std::to_string(iteration)) +
                ": rank " + differ + " differ from rank 0 " +
                (at_start ? "(ranks running different kiln builds or backends, or --load reading different files; "
                            "launch every rank with the same kiln and the same checkpoint)"
                          : "(a bug in kiln's gradient all-reduce; please report it)"));
  if (at_start) return;
  if (comm.is_last_rank())
    std::printf(" [check] parameters identical on all %d ranks at iteration %ld (hash %016llx)\n", comm.size(),
                static_cast<long>(iteration), static_cast<unsigned long long>(h));
}

}  // namespace kiln::trainer::dist
