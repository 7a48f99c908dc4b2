#include "trainer/dist/gradient_allreduce.h"

#include <algorithm>
#include <cstdio>

#include "core/error.h"
#include "core/log.h"
#include "trainer/model/step_graphs.h"

namespace kiln::trainer::dist {

GradientAllReduce::GradientAllReduce(Comm& comm, const ModelState& state, int64_t bucket_elements) : comm_(comm) {
  const size_t bucket_floats = static_cast<size_t>(std::max<int64_t>(1, bucket_elements));
  // Last parameters first, as backward produces them (the order Megatron
  // buckets in, so a future overlap with backward can start early).
  const std::vector<ParamSpec>& params = state.params();
  for (auto it = params.rbegin(); it != params.rend(); ++it) {
    DeviceBuffer& grad = state.buffer(grad_name(it->name));
    const size_t count = static_cast<size_t>(grad.size() / sizeof(float));  // f32 accumulators, any compute dtype
    if (buckets_.empty() || buckets_.back().host.size() + count > bucket_floats) buckets_.emplace_back();
    Bucket& b = buckets_.back();
    b.slices.push_back({&grad, b.host.size(), count});
    b.host.resize(b.host.size() + count);
    b.not_final = b.slices.size();
    bucket_of_[grad_name(it->name)] = buckets_.size() - 1;
  }
}

void GradientAllReduce::start_bucket(Bucket& b) {
  for (const Slice& s : b.slices) s.buffer->read(b.host.data() + s.offset, s.count * sizeof(float));
  comm_.start_sum(b.host);
  b.started = true;
}

void GradientAllReduce::start_ready(const std::vector<std::string>& ports) {
  if (comm_.size() == 1) return;
  for (const std::string& port : ports) {
    const auto it = bucket_of_.find(port);
    if (it == bucket_of_.end()) continue;  // not a gradient (the loss, a sum of squares)
    Bucket& b = buckets_[it->second];
    if (b.not_final > 0 && --b.not_final == 0 && !b.started) start_bucket(b);
  }
}

void GradientAllReduce::start() {
  if (comm_.size() == 1) return;
  size_t early = 0;
  for (Bucket& b : buckets_) {
    if (b.started) ++early;
    if (!b.started) start_bucket(b);
  }
  if (early > 0)
    logger().debug("gradient all-reduce: {} of {} buckets started during backward", early, buckets_.size());
}

void GradientAllReduce::finish() {
  if (comm_.size() == 1) return;
  for (Bucket& b : buckets_) {
    for (const Slice& s : b.slices) s.buffer->write(b.host.data() + s.offset, s.count * sizeof(float));
    b.not_final = b.slices.size();
    b.started = false;
  }
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
