#include "trainer/pipeline_schedule.h"

#include <algorithm>
#include <string>
#include <utility>

#include "trainer/model/step_graphs.h"

namespace kiln::trainer {

namespace {
// Activations flow up the pipeline under one tag and their gradients down
// under another, so the two streams between neighbours never cross.
constexpr int kActivationTag = 1;
constexpr int kGradientTag = 2;
constexpr int kNobody = -1;
}  // namespace

PipelineSchedule::PipelineSchedule(Setup& run, Prepare prepare, OverlapHooks hooks)
    : run_(run),
      prepare_(std::move(prepare)),
      hooks_(std::move(hooks)),
      stages_(*run.pp_group),
      stage_(static_cast<int>(run.at.pp_rank)),
      last_(static_cast<int>(run.at.pp - 1)),
      activation_elements_(
          static_cast<size_t>(run.cfg.micro_batch_size * run.cfg.model.local_seq_length() * run.cfg.model.hidden_size)),
      output_(activation_elements_),
      grad_output_(activation_elements_),
      grad_input_(activation_elements_) {
  if (run.chunks.size() > 1) interleaved_ = std::make_unique<InterleavedSchedule>(run, prepare_, hooks_);
}

void PipelineSchedule::exchange(const std::vector<float>* send, int send_peer, int send_tag,
                                std::vector<float>* receive, int receive_peer, int receive_tag, const char* what,
                                int64_t m) {
  if (send_peer == kNobody && receive_peer == kNobody) return;
  if (send_peer != kNobody) stages_.start_send(*send, send_peer, send_tag);
  if (receive_peer != kNobody) {
    receive->resize(activation_elements_);
    stages_.start_recv(*receive, receive_peer, receive_tag);
  }
  std::string message = "pipeline ";
  message += what;
  message += " of micro-batch " + std::to_string(m) + " on stage " + std::to_string(stage_) + " at iteration " +
             std::to_string(iteration_);
  stages_.wait(message);
}

void PipelineSchedule::receive_forward(int64_t m) {
  if (stage_ == 0) return;
  exchange(nullptr, kNobody, 0, &inputs_[static_cast<size_t>(m)], stage_ - 1, kActivationTag, "receive of activations",
           m);
}

// The last stage's forward runs inside its train step (backward()).
void PipelineSchedule::forward(int64_t m) {
  if (stage_ == last_) return;
  graph::Executable& exe = *run_.chunks.front().stage_forward;
  prepare_(exe, m);
  if (stage_ > 0) {
    const std::vector<float>& in = inputs_[static_cast<size_t>(m)];
    exe.buffer(kHiddenIn)->write(in.data(), in.size() * sizeof(float));
  }
  exe.run(nullptr, m == 0 ? hooks_.params_needed : nullptr);
  exe.buffer(kHiddenOut)->read(output_.data(), output_.size() * sizeof(float));
}

// The last stage's forward runs here, so its first is micro-batch 0's.
void PipelineSchedule::backward(int64_t m) {
  graph::Executable& exe = m == 0 ? *run_.chunks.front().first_micro_batch : *run_.chunks.front().next_micro_batch;
  prepare_(exe, m);
  if (stage_ > 0) {
    std::vector<float>& in = inputs_[static_cast<size_t>(m)];
    exe.buffer(kHiddenIn)->write(in.data(), in.size() * sizeof(float));
    std::vector<float>().swap(in);  // no longer in flight
  }
  if (stage_ < last_) exe.buffer(kGradHiddenOut)->write(grad_output_.data(), grad_output_.size() * sizeof(float));
  const bool last = m == run_.micro_batches - 1;
  exe.run(last ? hooks_.grads_final : nullptr, m == 0 && stage_ == last_ ? hooks_.params_needed : nullptr);
  // After its last piece too: the pipeline's messages follow.
  if (last && hooks_.grads_final) hooks_.grads_final(exe.output_ports());
  if (stage_ == last_) loss_sum_ += read_scalar(exe, "loss");
  if (stage_ > 0) exe.buffer(kGradHiddenIn)->read(grad_input_.data(), grad_input_.size() * sizeof(float));
}

double PipelineSchedule::train_step(int64_t iteration) {
  if (interleaved_) return interleaved_->train_step(iteration);
  iteration_ = iteration;
  loss_sum_ = 0;
  const int64_t M = run_.micro_batches;  // this step's (--rampup-batch-size)
  inputs_.resize(static_cast<size_t>(M));
  const int64_t warmup = std::min<int64_t>(last_ - stage_, M);
  const int64_t steady = M - warmup;
  const int next = stage_ < last_ ? stage_ + 1 : kNobody;
  const int previous = stage_ > 0 ? stage_ - 1 : kNobody;
  for (int64_t m = 0; m < warmup; ++m) {
    receive_forward(m);
    forward(m);
    exchange(&output_, next, kActivationTag, nullptr, kNobody, 0, "send of activations", m);
  }
  if (steady > 0) receive_forward(warmup);
  for (int64_t i = 0; i < steady; ++i) {
    const int64_t m_forward = warmup + i, m_backward = i;
    forward(m_forward);
    exchange(&output_, next, kActivationTag, &grad_output_, next, kGradientTag, "send of activations", m_forward);
    backward(m_backward);
    if (i == steady - 1) {
      exchange(&grad_input_, previous, kGradientTag, nullptr, kNobody, 0, "send of gradients", m_backward);
    } else {
      const int64_t m_next = m_forward + 1;
      exchange(&grad_input_, previous, kGradientTag,
               previous == kNobody ? nullptr : &inputs_[static_cast<size_t>(m_next)], previous, kActivationTag,
               "send of gradients", m_backward);
    }
  }
  for (int64_t i = 0; i < warmup; ++i) {
    const int64_t m = steady + i;
    exchange(nullptr, kNobody, 0, &grad_output_, next, kGradientTag, "receive of gradients", m);
    backward(m);
    exchange(&grad_input_, previous, kGradientTag, nullptr, kNobody, 0, "send of gradients", m);
  }
  return loss_sum_;
}

double PipelineSchedule::evaluate(int64_t count, const Prepare& prepare_eval) {
  if (interleaved_) return interleaved_->evaluate(count, prepare_eval);
  graph::Executable& exe = *run_.chunks.front().eval;
  const int next = stage_ < last_ ? stage_ + 1 : kNobody;
  std::vector<float> in;
  double sum = 0;
  for (int64_t i = 0; i < count; ++i) {
    if (stage_ > 0) {
      exchange(nullptr, kNobody, 0, &in, stage_ - 1, kActivationTag, "receive of validation activations", i);
      exe.buffer(kHiddenIn)->write(in.data(), in.size() * sizeof(float));
    }
    prepare_eval(exe, i);
    exe.run();
    if (stage_ == last_) {
      sum += read_scalar(exe, "loss");
    } else {
      exe.buffer(kHiddenOut)->read(output_.data(), output_.size() * sizeof(float));
      exchange(&output_, next, kActivationTag, nullptr, kNobody, 0, "send of validation activations", i);
    }
  }
  return sum;
}

}  // namespace kiln::trainer
