#include "trainer/dist/gradient_sync.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/log.h"
#include "kiln/half.h"
#include "trainer/model/step_graphs.h"

namespace kiln::trainer::dist {

GradientSync::GradientSync(Mode mode, Comm& dp_group, const ModelState& state, const GptConfig& stage, int64_t tp_rank,
                           int64_t bucket_elements)
    : mode_(mode),
      grad_dtype_(stage.grad_dtype),
      group_(dp_group),
      active_(dp_group.size() > 1),
      layout_(state.params(), bucket_elements) {
  const std::vector<ParamSpec>& params = state.params();
  const bool sharded = mode == Mode::Sharded;
  buckets_.resize(layout_.size());
  for (size_t b = 0; b < layout_.size(); ++b) {
    Bucket& bucket = buckets_[b];
    for (size_t i : layout_.members(b)) {
      const ParamSpec& s = params[i];
      const int64_t numel = graph::numel(s.shape);
      const size_t size = sharded ? static_cast<size_t>(shard_elements(numel, group_.size())) : numel;
      const bool tp_sharded = s.shard_dim >= 0 && stage.tensor_parallel > 1;
      DeviceBuffer& grad = state.buffer(grad_name(s.name));
      bucket.parts.push_back({&grad, sharded ? &state.buffer(grad_shard_name(s.name)) : &grad,
                              sharded ? &state.buffer(main_param_name(s.name)) : nullptr, &state.buffer(s.name), s.name,
                              static_cast<size_t>(numel), size, bucket.block,
                              (tp_sharded || tp_rank == 0) && counted_in_grad_norm(stage, s)});
      bucket.block += size;
      bucket_of_param_[s.name] = b;
    }
    // One process keeps its gradients where backward wrote them.
    if (!active_) continue;
    // bf16 gradients have blocks of their own; the f32 ones then serve the
    // parameters' all-gather only (Sharded).
    if (bf16()) {
      bucket.all16.resize(bucket.block * blocks());
      if (sharded) bucket.mine16.resize(bucket.block);
    }
    if (!bf16() || sharded) bucket.all.resize(bucket.block * blocks());
    if (sharded) bucket.mine.resize(bucket.block);
  }
}

// Part r of a parameter goes to block r; the end of the last part stays 0.
// The gradients are f32 accumulators whatever the compute dtype, or bf16
// ones (--main-grads-dtype bf16), moved and summed as they are.
void GradientSync::start_bucket(Bucket& b) {
  const size_t bytes = kiln_dtype_size(grad_dtype_);
  for (const Part& p : b.parts) {
    for (size_t r = 0, first = 0; r < blocks(); ++r, first += p.size) {
      const size_t at = r * b.block + p.offset;
      const size_t n = first < p.numel ? std::min(p.size, p.numel - first) : 0;
      if (bf16()) {
        if (n > 0) p.grad->read(b.all16.data() + at, n * bytes, first * bytes);
        std::fill(b.all16.data() + at + n, b.all16.data() + at + p.size, uint16_t{0});
      } else {
        if (n > 0) p.grad->read(b.all.data() + at, n * bytes, first * bytes);
        std::fill(b.all.data() + at + n, b.all.data() + at + p.size, 0.0f);
      }
    }
  }
  if (bf16()) {
    if (mode_ == Mode::Sharded)
      group_.start_reduce_scatter_bf16(b.all16, b.mine16);
    else
      group_.start_sum_bf16(b.all16);
  } else if (mode_ == Mode::Sharded) {
    group_.start_reduce_scatter(b.all, b.mine);
  } else {
    group_.start_sum(b.all);
  }
}

void GradientSync::start_ready(const std::vector<std::string>& ports) {
  if (!active_) return;
  for (size_t b : layout_.complete(ports)) start_bucket(buckets_[b]);
}

void GradientSync::start() {
  if (!active_) return;
  size_t early = 0;
  for (size_t b : layout_.remaining(&early)) start_bucket(buckets_[b]);
  if (early > 0)
    logger().debug("gradient {}: {} of {} buckets started during backward",
                   mode_ == Mode::Sharded ? "reduce-scatter" : "all-reduce", early, buckets_.size());
}

void GradientSync::finish() {
  if (!active_) return;
  for (Bucket& b : buckets_)
    for (const Part& p : b.parts) {
      if (bf16())
        p.summed->write(summed16(b).data() + p.offset, p.size * sizeof(uint16_t));
      else
        p.summed->write(summed(b).data() + p.offset, p.size * sizeof(float));
    }
  layout_.reset();
}

void GradientSync::sum_over(Comm& group, const std::string& param, const std::string& what) {
  const auto it = bucket_of_param_.find(param);
  if (it == bucket_of_param_.end()) throw Error("gradient synchronisation: no parameter " + param + " on this rank");
  Bucket& b = buckets_[it->second];
  const Part& p = *std::find_if(b.parts.begin(), b.parts.end(), [&](const Part& q) { return q.name == param; });
  if (active_) {
    if (bf16())
      group.sum_bf16(summed16(b).subspan(p.offset, p.size), what);
    else
      group.sum(summed(b).subspan(p.offset, p.size), what);
    return;
  }
  // One data-parallel rank: the device's gradient is already its sum.
  if (bf16()) {
    std::vector<uint16_t> values(p.numel);
    p.grad->read(values.data(), p.numel * sizeof(uint16_t));
    group.sum_bf16(std::span<uint16_t>(values), what);
    p.grad->write(values.data(), p.numel * sizeof(uint16_t));
    return;
  }
  std::vector<float> values(p.numel);
  p.grad->read(values.data(), p.numel * 4);
  group.sum(std::span<float>(values), what);
  p.grad->write(values.data(), p.numel * 4);
}

double GradientSync::squared_norm(const std::function<double()>& stage_squares, Comm& world, Comm* stages,
                                  const std::string& what) const {
  if (mode_ == Mode::AllReduce) {
    double squares = stage_squares();
    // Each pipeline stage's own parameters (a tied embedding counted on the first).
    if (stages) stages->sum(std::span<double>(&squares, 1), "pipeline " + what);
    return squares;
  }
  double squares = 0;
  for (const Bucket& b : buckets_)
    for (const Part& p : b.parts) {
      if (!p.counted_in_norm) continue;
      for (size_t i = p.offset; i < p.offset + p.size; ++i) {
        const double g = bf16() ? kiln_bf16_to_f32(b.mine16[i]) : b.mine[i];
        squares += g * g;
      }
    }
  world.sum(std::span<double>(&squares, 1), what);
  return squares;
}

// Buckets hold the last parameters first: the forward reads the last
// bucket first.
void GradientSync::start_parameter_gather() {
  if (mode_ != Mode::Sharded) return;
  for (auto it = buckets_.rbegin(); it != buckets_.rend(); ++it) {
    Bucket& b = *it;
    for (const Part& p : b.parts) p.main->read(b.mine.data() + p.offset, p.size * 4);
    group_.start_all_gather(b.mine, b.all);
    b.gather_started = group_.started();
    b.gather_pending = true;
  }
}

void GradientSync::write_parameters(Bucket& b) {
  for (const Part& p : b.parts)
    for (size_t r = 0, first = 0; first < p.numel; ++r, first += p.size)
      p.param->write(b.all.data() + r * b.block + p.offset, std::min(p.size, p.numel - first) * 4, first * 4);
  b.gather_pending = false;
}

size_t GradientSync::parameters_needed(const std::vector<std::string>& ports, const std::string& what) {
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

void GradientSync::finish_parameter_gather(const std::string& what) {
  const bool pending = std::any_of(buckets_.begin(), buckets_.end(), [](const Bucket& b) { return b.gather_pending; });
  if (!pending) return;
  group_.wait(what);
  for (Bucket& b : buckets_)
    if (b.gather_pending) write_parameters(b);
}

}  // namespace kiln::trainer::dist
