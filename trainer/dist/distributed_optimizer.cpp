#include "trainer/dist/distributed_optimizer.h"

#include <algorithm>

#include "core/error.h"
#include "trainer/model/step_graphs.h"

namespace kiln::trainer::dist {

DistributedOptimizer::DistributedOptimizer(Comm& dp_group, const ModelState& state, const GptConfig& stage,
                                           int64_t tp_rank)
    : group_(dp_group) {
  for (const ParamSpec& s : state.params()) {
    const int64_t numel = graph::numel(s.shape);
    const size_t size = static_cast<size_t>(shard_elements(numel, group_.size()));
    const bool sharded = s.shard_dim >= 0 && stage.tensor_parallel > 1;
    parts_.push_back({&state.buffer(grad_name(s.name)), &state.buffer(grad_shard_name(s.name)),
                      &state.buffer(main_param_name(s.name)), &state.buffer(s.name), s.name, static_cast<size_t>(numel),
                      size, block_, (sharded || tp_rank == 0) && counted_in_grad_norm(stage, s)});
    block_ += size;
  }
  all_.resize(block_ * static_cast<size_t>(group_.size()));
  mine_.resize(block_);
}

void DistributedOptimizer::start_reduce_scatter() {
  // Part r of a parameter goes to block r; the end of the last part stays 0.
  for (const Part& p : parts_) {
    for (size_t r = 0, first = 0; r < static_cast<size_t>(group_.size()); ++r, first += p.size) {
      float* block = all_.data() + r * block_ + p.offset;
      const size_t n = first < p.numel ? std::min(p.size, p.numel - first) : 0;
      if (n > 0) p.grad->read(block, n * 4, first * 4);
      std::fill(block + n, block + p.size, 0.0f);
    }
  }
  group_.start_reduce_scatter(all_, mine_);
}

void DistributedOptimizer::finish_reduce_scatter() {
  for (const Part& p : parts_) p.grad_shard->write(mine_.data() + p.offset, p.size * 4);
}

std::span<float> DistributedOptimizer::summed_part(const std::string& param) {
  for (const Part& p : parts_)
    if (p.name == param) return {mine_.data() + p.offset, p.size};
  std::string what = "distributed optimizer: no parameter ";
  what += param;
  what += " on this rank";
  throw Error(what);
}

double DistributedOptimizer::local_grad_squares() const {
  double sum = 0;
  for (const Part& p : parts_) {
    if (!p.counted_in_norm) continue;
    for (size_t i = p.offset; i < p.offset + p.size; ++i) sum += static_cast<double>(mine_[i]) * mine_[i];
  }
  return sum;
}

void DistributedOptimizer::gather_parameters(const std::string& what) {
  for (const Part& p : parts_) p.main->read(mine_.data() + p.offset, p.size * 4);
  group_.start_all_gather(mine_, all_);
  group_.wait(what);
  for (const Part& p : parts_)
    for (size_t r = 0, first = 0; first < p.numel; ++r, first += p.size)
      p.param->write(all_.data() + r * block_ + p.offset, std::min(p.size, p.numel - first) * 4, first * 4);
}

}  // namespace kiln::trainer::dist
