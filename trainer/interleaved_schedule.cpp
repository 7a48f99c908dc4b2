#include "trainer/interleaved_schedule.h"

#include <algorithm>
#include <string>
#include <utility>

#include "trainer/model/step_graphs.h"

namespace kiln::trainer {

namespace {
// Apart from the plain schedule's tags (1, 2) and the checkpoint gather's (3).
int activation_tag(int64_t chunk) { return static_cast<int>(16 + 2 * chunk); }
int gradient_tag(int64_t chunk) { return static_cast<int>(17 + 2 * chunk); }
}  // namespace

int64_t interleaved_warmup(int64_t P, int64_t p, int64_t vp, int64_t M) {
  const int64_t total = M * vp;
  if (M == P) return total;  // Megatron: all warm-up when there is a single round
  return std::min((P - p - 1) * 2 + (vp - 1) * P, total);
}

int64_t interleaved_chunk(int64_t k, int64_t P, int64_t vp, bool forward) {
  // Python's modulo: the schedule asks about passes before the first (k < 0).
  const int64_t in_group = ((k % (P * vp)) + P * vp) % (P * vp);
  const int64_t chunk = in_group / P;
  return forward ? chunk : vp - chunk - 1;
}

int64_t interleaved_micro_batch(int64_t k, int64_t P, int64_t vp) { return (k / (P * vp)) * P + k % P; }

std::vector<PipelinePass> interleaved_order(int64_t P, int64_t p, int64_t vp, int64_t M) {
  const int64_t total = M * vp, warmup = interleaved_warmup(P, p, vp, M);
  std::vector<PipelinePass> order;
  auto forward = [&](int64_t k) {
    order.push_back({true, interleaved_micro_batch(k, P, vp), interleaved_chunk(k, P, vp, true)});
  };
  auto backward = [&](int64_t k) {
    order.push_back({false, interleaved_micro_batch(k, P, vp), interleaved_chunk(k, P, vp, false)});
  };
  for (int64_t k = 0; k < warmup; ++k) forward(k);
  for (int64_t k = 0; k < total - warmup; ++k) {
    forward(k + warmup);
    backward(k);
  }
  for (int64_t k = total - warmup; k < total; ++k) backward(k);
  return order;
}

InterleavedSchedule::InterleavedSchedule(Setup& run, Prepare prepare, OverlapHooks hooks)
    : run_(run),
      prepare_(std::move(prepare)),
      hooks_(std::move(hooks)),
      stages_(*run.pp_group),
      stage_(static_cast<int>(run.at.pp_rank)),
      last_(static_cast<int>(run.at.pp - 1)),
      next_(static_cast<int>((run.at.pp_rank + 1) % run.at.pp)),
      previous_(static_cast<int>((run.at.pp_rank + run.at.pp - 1) % run.at.pp)),
      vp_(static_cast<int64_t>(run.chunks.size())),
      activation_elements_(
          static_cast<size_t>(run.cfg.micro_batch_size * run.cfg.model.local_seq_length() * run.cfg.model.hidden_size)),
      inputs_(static_cast<size_t>(vp_)),
      inputs_received_(static_cast<size_t>(vp_)),
      grads_(static_cast<size_t>(vp_)),
      output_(activation_elements_),
      grad_input_(activation_elements_) {}

void InterleavedSchedule::exchange(int64_t send_forward, int64_t send_backward, int64_t receive_forward,
                                   int64_t receive_backward, int64_t k) {
  bool any = false;
  // The last rank's chunk c feeds rank 0's chunk c + 1, and gradients go back the same way.
  if (send_forward >= 0 && !last_virtual(send_forward)) {
    stages_.start_send(output_, next_, activation_tag(send_forward + (stage_ == last_ ? 1 : 0)));
    any = true;
  }
  if (send_backward >= 0 && !first_virtual(send_backward)) {
    stages_.start_send(grad_input_, previous_, gradient_tag(send_backward - (stage_ == 0 ? 1 : 0)));
    any = true;
  }
  if (receive_forward >= 0) {
    receive_activation_.resize(activation_elements_);
    stages_.start_recv(receive_activation_, previous_, activation_tag(receive_forward));
    any = true;
  }
  if (receive_backward >= 0) {
    receive_gradient_.resize(activation_elements_);
    stages_.start_recv(receive_gradient_, next_, gradient_tag(receive_backward));
    any = true;
  }
  if (!any) return;
  std::string message = "interleaved pipeline messages after pass " + std::to_string(k) + " on stage ";
  message += std::to_string(stage_) + " at iteration " + std::to_string(iteration_);
  stages_.wait(message);
  if (receive_forward >= 0) {
    auto c = static_cast<size_t>(receive_forward);
    inputs_[c][static_cast<size_t>(inputs_received_[c]++)] = std::move(receive_activation_);
  }
  if (receive_backward >= 0) grads_[static_cast<size_t>(receive_backward)].push_back(std::move(receive_gradient_));
}

// The last virtual stage's forward runs inside its train step (backward()).
void InterleavedSchedule::forward(int64_t k) {
  const int64_t c = interleaved_chunk(k, last_ + 1, vp_, true), m = interleaved_micro_batch(k, last_ + 1, vp_);
  if (last_virtual(c)) return;
  graph::Executable& exe = *run_.chunks[static_cast<size_t>(c)].stage_forward;
  prepare_(exe, m);
  if (!first_virtual(c)) {
    const std::vector<float>& in = inputs_[static_cast<size_t>(c)][static_cast<size_t>(m)];
    exe.buffer(kHiddenIn)->write(in.data(), in.size() * sizeof(float));
  }
  exe.run(nullptr, m == 0 ? hooks_.params_needed : nullptr);
  exe.buffer(kHiddenOut)->read(output_.data(), output_.size() * sizeof(float));
}

void InterleavedSchedule::backward(int64_t k) {
  const int64_t c = interleaved_chunk(k, last_ + 1, vp_, false), m = interleaved_micro_batch(k, last_ + 1, vp_);
  ChunkSteps& steps = run_.chunks[static_cast<size_t>(c)];
  graph::Executable& exe = m == 0 ? *steps.first_micro_batch : *steps.next_micro_batch;
  prepare_(exe, m);
  if (!first_virtual(c)) {
    std::vector<float>& in = inputs_[static_cast<size_t>(c)][static_cast<size_t>(m)];
    exe.buffer(kHiddenIn)->write(in.data(), in.size() * sizeof(float));
    std::vector<float>().swap(in);  // no longer in flight
  }
  if (!last_virtual(c)) {
    std::deque<std::vector<float>>& pending = grads_[static_cast<size_t>(c)];
    exe.buffer(kGradHiddenOut)->write(pending.front().data(), pending.front().size() * sizeof(float));
    pending.pop_front();
  }
  const bool last = m == M_ - 1;
  // The last virtual stage's forward runs here, so its first is micro-batch 0's.
  exe.run(last ? hooks_.grads_final : nullptr, m == 0 && last_virtual(c) ? hooks_.params_needed : nullptr);
  // After its last piece too: another chunk's or stage's work follows.
  if (last && hooks_.grads_final) hooks_.grads_final(exe.output_ports());
  if (last_virtual(c)) loss_sum_ += read_scalar(exe, "loss");
  if (!first_virtual(c)) exe.buffer(kGradHiddenIn)->read(grad_input_.data(), grad_input_.size() * sizeof(float));
}

// Megatron's loop, with its rules for which messages each step receives.
double InterleavedSchedule::train_step(int64_t iteration) {
  iteration_ = iteration;
  loss_sum_ = 0;
  M_ = run_.micro_batches;  // this step's (--rampup-batch-size)
  for (int64_t c = 0; c < vp_; ++c) {
    inputs_[static_cast<size_t>(c)].assign(static_cast<size_t>(M_), {});
    inputs_received_[static_cast<size_t>(c)] = 0;
    grads_[static_cast<size_t>(c)].clear();
  }
  const int64_t P = last_ + 1, total = M_ * vp_;
  const bool all_warmup = M_ == P;
  const int64_t warmup = interleaved_warmup(P, stage_, vp_, M_), remaining = total - warmup;
  auto chunk = [&](int64_t k, bool forward) { return interleaved_chunk(k, P, vp_, forward); };
  if (stage_ > 0) exchange(-1, -1, 0, -1, -1);
  for (int64_t k = 0; k < warmup; ++k) {
    forward(k);
    const int64_t next_chunk = chunk(k + 1, true);
    const bool receive_previous = !(stage_ == 0 && next_chunk == 0) && k != total - 1;
    const bool receive_next = k == warmup - 1 && !all_warmup && stage_ != last_;
    exchange(chunk(k, true), -1, receive_previous ? next_chunk : -1, receive_next ? vp_ - 1 : -1, k);
  }
  for (int64_t k = 0; k < remaining; ++k) {
    const int64_t forward_k = k + warmup;
    forward(forward_k);
    backward(k);
    // The first rank is P - 1 passes ahead of the last, and the reverse for gradients.
    bool receive_previous = true, receive_next = true;
    int64_t next_forward = 0, next_backward = 0;
    if (stage_ == 0) {
      next_forward = chunk(forward_k - (P - 1), true);
      if (next_forward == vp_ - 1) receive_previous = false;
      ++next_forward;
    } else {
      next_forward = chunk(forward_k + 1, true);
    }
    if (stage_ == last_) {
      next_backward = chunk(k - (P - 1), false);
      if (next_backward == 0) receive_next = false;
      --next_backward;
    } else {
      next_backward = chunk(k + 1, false);
    }
    if (k == remaining - 1) receive_previous = false;
    exchange(chunk(forward_k, true), chunk(k, false), receive_previous ? next_forward : -1,
             receive_next ? next_backward : -1, forward_k);
  }
  if (all_warmup && stage_ != last_) exchange(-1, -1, -1, vp_ - 1, total);
  for (int64_t k = remaining; k < total; ++k) {
    backward(k);
    const int64_t next_backward = chunk(k + 1, false);
    const bool receive_next = !(stage_ == last_ && next_backward == vp_ - 1) && k != total - 1;
    exchange(-1, chunk(k, false), -1, receive_next ? next_backward : -1, k);
  }
  return loss_sum_;
}

double InterleavedSchedule::evaluate(int64_t count, const Prepare& prepare_eval) {
  double sum = 0;
  iteration_ = 0;
  std::vector<float> in(activation_elements_);
  for (int64_t i = 0; i < count; ++i) {
    for (int64_t c = 0; c < vp_; ++c) {
      graph::Executable& exe = *run_.chunks[static_cast<size_t>(c)].eval;
      if (!first_virtual(c)) {
        stages_.start_recv(in, previous_, activation_tag(c));
        stages_.wait("interleaved pipeline receive of validation activations of micro-batch " + std::to_string(i));
        exe.buffer(kHiddenIn)->write(in.data(), in.size() * sizeof(float));
      }
      prepare_eval(exe, i);
      exe.run();
      if (last_virtual(c)) {
        sum += read_scalar(exe, "loss");
      } else {
        exe.buffer(kHiddenOut)->read(output_.data(), output_.size() * sizeof(float));
        stages_.start_send(output_, next_, activation_tag(c + (stage_ == last_ ? 1 : 0)));
        stages_.wait("interleaved pipeline send of validation activations of micro-batch " + std::to_string(i));
      }
    }
  }
  return sum;
}

}  // namespace kiln::trainer
