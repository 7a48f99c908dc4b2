#include "trainer/dist/distributed_optimizer.h"

#include <algorithm>

#include "core/error.h"
#include "core/log.h"
#include "trainer/model/step_graphs.h"

namespace kiln::trainer::dist {

DistributedOptimizer::DistributedOptimizer(Comm& dp_group, const ModelState& state, const GptConfig& stage,
                                           int64_t tp_rank, int64_t bucket_elements)
    : group_(dp_group), layout_(state.params(), bucket_elements) {
  const std::vector<ParamSpec>& params = state.params();
  buckets_.resize(layout_.size());
  for (size_t b = 0; b < layout_.size(); ++b) {
    Bucket& bucket = buckets_[b];
    for (size_t i : layout_.members(b)) {
      const ParamSpec& s = params[i];
      const int64_t numel = graph::numel(s.shape);
      const size_t size = static_cast<size_t>(shard_elements(numel, group_.size()));
      const bool sharded = s.shard_dim >= 0 && stage.tensor_parallel > 1;
      bucket.parts.push_back({&state.buffer(grad_name(s.name)), &state.buffer(grad_shard_name(s.name)),
                              &state.buffer(main_param_name(s.name)), &state.buffer(s.name), s.name,
                              static_cast<size_t>(numel), size, bucket.block,
                              (sharded || tp_rank == 0) && counted_in_grad_norm(stage, s)});
      bucket.block += size;
      bucket_of_param_[s.name] = b;
    }
    bucket.all.resize(bucket.block * static_cast<size_t>(group_.size()));
    bucket.mine.resize(bucket.block);
  }
}

// Part r of a parameter goes to block r; the end of the last part stays 0.
void DistributedOptimizer::start_bucket(Bucket& b) {
  for (const Part& p : b.parts) {
    for (size_t r = 0, first = 0; r < static_cast<size_t>(group_.size()); ++r, first += p.size) {
      float* block = b.all.data() + r * b.block + p.offset;
      const size_t n = first < p.numel ? std::min(p.size, p.numel - first) : 0;
      if (n > 0) p.grad->read(block, n * 4, first * 4);
      std::fill(block + n, block + p.size, 0.0f);
    }
  }
  group_.start_reduce_scatter(b.all, b.mine);
}

void DistributedOptimizer::start_ready(const std::vector<std::string>& ports) {
  for (size_t b : layout_.complete(ports)) start_bucket(buckets_[b]);
}

void DistributedOptimizer::start_reduce_scatter() {
  size_t early = 0;
  for (size_t b : layout_.remaining(&early)) start_bucket(buckets_[b]);
  if (early > 0)
    logger().debug("gradient reduce-scatter: {} of {} buckets started during backward", early, buckets_.size());
}

void DistributedOptimizer::finish_reduce_scatter() {
  for (Bucket& b : buckets_)
    for (const Part& p : b.parts) p.grad_shard->write(b.mine.data() + p.offset, p.size * 4);
  layout_.reset();
}

std::span<float> DistributedOptimizer::summed_part(const std::string& param) {
  if (const auto it = bucket_of_param_.find(param); it != bucket_of_param_.end()) {
    Bucket& b = buckets_[it->second];
    for (const Part& p : b.parts)
      if (p.name == param) return {b.mine.data() + p.offset, p.size};
  }
  std::string what = "distributed optimizer: no parameter ";
  what += param;
  what += " on this rank";
  throw Error(what);
}

double DistributedOptimizer::local_grad_squares() const {
  double sum = 0;
  for (const Bucket& b : buckets_)
    for (const Part& p : b.parts) {
      if (!p.counted_in_norm) continue;
      for (size_t i = p.offset; i < p.offset + p.size; ++i) sum += static_cast<double>(b.mine[i]) * b.mine[i];
    }
  return sum;
}

// Buckets hold the last parameters first: the forward reads the last
// bucket first.
void DistributedOptimizer::start_parameter_gather() {
  for (auto it = buckets_.rbegin(); it != buckets_.rend(); ++it) {
    Bucket& b = *it;
    for (const Part& p : b.parts) p.main->read(b.mine.data() + p.offset, p.size * 4);
    group_.start_all_gather(b.mine, b.all);
    b.gather_started = group_.started();
    b.gather_pending = true;
  }
}

void DistributedOptimizer::write_parameters(Bucket& b) {
  for (const Part& p : b.parts)
    for (size_t r = 0, first = 0; first < p.numel; ++r, first += p.size)
      p.param->write(b.all.data() + r * b.block + p.offset, std::min(p.size, p.numel - first) * 4, first * 4);
  b.gather_pending = false;
}

size_t DistributedOptimizer::parameters_needed(const std::vector<std::string>& ports, const std::string& what) {
  size_t written = 0;
  for (const std::string& port : ports) {
    const auto it = bucket_of_param_.find(port);
    if (it == bucket_of_param_.end()) continue;  // not a parameter (tokens, a gradient, main.*)
    Bucket& b = buckets_[it->second];
    if (!b.gather_pending) continue;
    group_.wait_through(b.gather_started, what);
    write_parameters(b);
    ++written;
  }
  return written;
}

void DistributedOptimizer::finish_parameter_gather(const std::string& what) {
  const bool pending = std::any_of(buckets_.begin(), buckets_.end(), [](const Bucket& b) { return b.gather_pending; });
  if (!pending) return;
  group_.wait(what);
  for (Bucket& b : buckets_)
    if (b.gather_pending) write_parameters(b);
}

}  // namespace kiln::trainer::dist
