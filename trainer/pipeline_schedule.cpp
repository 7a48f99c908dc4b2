#include "trainer/pipeline_schedule.h"

#include <string>
#include <utility>

#include "trainer/model/step_graphs.h"
#include "trainer/pipeline_messages.h"

namespace kiln::trainer {

namespace {
// Tagged by the chunk that reads the message; apart from the checkpoint gather's tag (3).
int activation_tag(int64_t chunk) { return static_cast<int>(16 + 2 * chunk); }
int gradient_tag(int64_t chunk) { return static_cast<int>(17 + 2 * chunk); }

std::string describe(const PipelinePass& pass) {
  return std::string(pass.forward ? "forward" : "backward") + " of micro-batch " + std::to_string(pass.micro_batch) +
         " through chunk " + std::to_string(pass.chunk);
}
}  // namespace

PipelineSchedule::PipelineSchedule(Setup& run, Prepare prepare, OverlapHooks hooks)
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
      output_(activation_elements_),
      grad_input_(activation_elements_) {}

PipelineSchedule::Plan PipelineSchedule::plan(
    const std::function<std::vector<PipelinePass>(int64_t rank)>& order_of) const {
  std::vector<std::vector<PipelinePass>> orders;
  for (int64_t r = 0; r <= last_; ++r) orders.push_back(order_of(r));
  std::vector<std::vector<PipelinePass>> receives = pipeline_receives(orders, vp_, stage_);
  return {std::move(orders[static_cast<size_t>(stage_)]), std::move(receives)};
}

std::vector<float>& PipelineSchedule::input(const PipelinePass& pass) {
  return inputs_[static_cast<size_t>(pass.chunk)][static_cast<size_t>(pass.micro_batch)];
}

std::vector<float>& PipelineSchedule::output_gradient(const PipelinePass& pass) {
  return output_gradients_[static_cast<size_t>(pass.chunk)][static_cast<size_t>(pass.micro_batch)];
}

void PipelineSchedule::exchange(const PipelinePass* sent, const std::vector<PipelinePass>& inputs,
                                const PipelinePass* next) {
  bool any = false;
  // The last rank's chunk c feeds rank 0's chunk c + 1, and gradients go back the same way.
  if (sent != nullptr && sent->forward && !last_virtual(sent->chunk)) {
    stages_.start_send(output_, next_, activation_tag(sent->chunk + (stage_ == last_ ? 1 : 0)));
    any = true;
  } else if (sent != nullptr && !sent->forward && !first_virtual(sent->chunk)) {
    stages_.start_send(grad_input_, previous_, gradient_tag(sent->chunk - (stage_ == 0 ? 1 : 0)));
    any = true;
  }
  for (const PipelinePass& reader : inputs) {
    std::vector<float>& buffer = reader.forward ? input(reader) : output_gradient(reader);
    buffer.resize(activation_elements_);
    if (reader.forward) {
      stages_.start_recv(buffer, previous_, activation_tag(reader.chunk));
    } else {
      stages_.start_recv(buffer, next_, gradient_tag(reader.chunk));
    }
    any = true;
  }
  if (!any) return;
  std::string message = "pipeline messages ";
  message += next != nullptr ? "before the " + describe(*next) : std::string("after the last pass");
  message += " on stage " + std::to_string(stage_) + " at iteration " + std::to_string(iteration_);
  stages_.wait(message);
}

void PipelineSchedule::execute(const Plan& plan, const std::function<void(size_t)>& run_pass) {
  for (size_t i = 0; i < plan.order.size(); ++i) {
    exchange(i > 0 ? &plan.order[i - 1] : nullptr, plan.receives[i], &plan.order[i]);
    run_pass(i);
  }
  if (!plan.order.empty()) exchange(&plan.order.back(), {}, nullptr);
}

// The last virtual stage's forward runs inside its train step (backward()).
void PipelineSchedule::forward(const PipelinePass& pass, bool first) {
  if (last_virtual(pass.chunk)) return;
  graph::Executable& exe = *run_.chunks[static_cast<size_t>(pass.chunk)].stage_forward;
  prepare_(exe, pass.micro_batch);
  if (!first_virtual(pass.chunk)) {
    const std::vector<float>& in = input(pass);
    exe.buffer(kHiddenIn)->write(in.data(), in.size() * sizeof(float));
  }
  exe.run(nullptr, first ? hooks_.params_needed : nullptr);
  exe.buffer(kHiddenOut)->read(output_.data(), output_.size() * sizeof(float));
}

// `first` and `last`: the chunk's first and last backward of the step.
void PipelineSchedule::backward(const PipelinePass& pass, bool first, bool last) {
  ChunkSteps& steps = run_.chunks[static_cast<size_t>(pass.chunk)];
  graph::Executable& exe = first ? *steps.first_micro_batch : *steps.next_micro_batch;
  prepare_(exe, pass.micro_batch);
  if (!first_virtual(pass.chunk)) {
    std::vector<float>& in = input(pass);
    exe.buffer(kHiddenIn)->write(in.data(), in.size() * sizeof(float));
    std::vector<float>().swap(in);  // no longer in flight
  }
  if (!last_virtual(pass.chunk)) {
    std::vector<float>& grad = output_gradient(pass);
    exe.buffer(kGradHiddenOut)->write(grad.data(), grad.size() * sizeof(float));
    std::vector<float>().swap(grad);
  }
  // The last virtual stage's forward runs here, so its first is this chunk's first.
  exe.run(last ? hooks_.grads_final : nullptr, first && last_virtual(pass.chunk) ? hooks_.params_needed : nullptr);
  // After its last piece too: another chunk's or stage's work follows.
  if (last && hooks_.grads_final) hooks_.grads_final(exe.output_ports());
  run_.progress.fp8.record(exe);
  if (last_virtual(pass.chunk)) loss_sum_ += read_scalar(exe, "loss");
  if (!first_virtual(pass.chunk))
    exe.buffer(kGradHiddenIn)->read(grad_input_.data(), grad_input_.size() * sizeof(float));
}

double PipelineSchedule::train_step(int64_t iteration) {
  iteration_ = iteration;
  loss_sum_ = 0;
  const int64_t M = run_.micro_batches;  // this step's (--rampup-batch-size)
  if (M != training_micro_batches_) {
    training_ = plan([&](int64_t rank) { return training_order(last_ + 1, rank, vp_, M); });
    training_micro_batches_ = M;
  }
  inputs_.assign(static_cast<size_t>(vp_), std::vector<std::vector<float>>(static_cast<size_t>(M)));
  output_gradients_.assign(static_cast<size_t>(vp_), std::vector<std::vector<float>>(static_cast<size_t>(M)));
  // Each chunk's passes so far this step, for the hooks and the first backward's graph.
  std::vector<int64_t> forwards(static_cast<size_t>(vp_)), backwards(static_cast<size_t>(vp_));
  execute(training_, [&](size_t i) {
    const PipelinePass& pass = training_.order[i];
    const auto chunk = static_cast<size_t>(pass.chunk);
    if (pass.forward) {
      forward(pass, forwards[chunk]++ == 0);
    } else {
      const int64_t done = backwards[chunk]++;
      backward(pass, done == 0, done == M - 1);
    }
  });
  return loss_sum_;
}

double PipelineSchedule::evaluate_forward(const PipelinePass& pass, const Prepare& prepare_eval) {
  graph::Executable& exe = *run_.chunks[static_cast<size_t>(pass.chunk)].eval;
  if (!first_virtual(pass.chunk)) {
    std::vector<float>& in = input(pass);
    exe.buffer(kHiddenIn)->write(in.data(), in.size() * sizeof(float));
    std::vector<float>().swap(in);
  }
  prepare_eval(exe, pass.micro_batch);
  exe.run();
  if (last_virtual(pass.chunk)) return read_scalar(exe, "loss");
  exe.buffer(kHiddenOut)->read(output_.data(), output_.size() * sizeof(float));
  return 0;
}

double PipelineSchedule::evaluate(int64_t count, const Prepare& prepare_eval) {
  const Plan evaluation = plan([&](int64_t) { return forward_only_order(vp_, count); });
  inputs_.assign(static_cast<size_t>(vp_), std::vector<std::vector<float>>(static_cast<size_t>(count)));
  double sum = 0;
  execute(evaluation, [&](size_t i) {
    const PipelinePass& pass = evaluation.order[i];
    const double loss = evaluate_forward(pass, prepare_eval);
    if (last_virtual(pass.chunk)) sum += loss;
  });
  return sum;
}

}  // namespace kiln::trainer
