#include "trainer/step.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <iterator>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "core/log.h"
#include "trainer/model/dropout_keys.h"
#include "trainer/model/step_graphs.h"

namespace kiln::trainer {

namespace {
// The test hook (docs/MIXED_PRECISION.md): KILN_TEST_GRAD_OVERFLOW_AT=N makes
// rank 0 overwrite one element of its gradients with +inf at iteration N,
// after the gradient all-reduce, as an fp16 overflow on that rank would.
int64_t overflow_test_iteration() {
  const char* at = std::getenv("KILN_TEST_GRAD_OVERFLOW_AT");
  if (!at || !*at) return 0;
  char* end = nullptr;
  const long long n = std::strtoll(at, &end, 10);
  if (*end != '\0' || n <= 0)
    throw Error(std::string("KILN_TEST_GRAD_OVERFLOW_AT=") + at + " is not a positive iteration number");
  return n;
}
}  // namespace

Step::Step(Setup& run, const JobControl& control)
    : run_(run),
      control_(control),
      dump_(GradientDump::open(run.comm.rank())),
      batch_dump_(BatchDump::open(run.comm.rank())),
      overflow_test_iteration_(overflow_test_iteration()) {
  if (dump_ && (run_.at.pp > 1 || run_.at.tp > 1 || run_.state->optimizer_sharded()))
    throw Error(
        "KILN_TEST_DUMP_GRADIENTS: dumps data parallelism only; drop pipeline and tensor parallelism and "
        "--use-distributed-optimizer");
  if (batch_dump_ && run_.at.pp > 1)
    throw Error("KILN_TEST_DUMP_BATCHES: dumps runs without pipeline parallelism; drop --pipeline-model-parallel-size");
  // Each bucket's gradient collective starts once backward has written its
  // gradients for the last time, while the earlier layers' backward runs.
  if (overlaps_grad_reduce())
    hooks_.grads_final = [this](const std::vector<std::string>& ports) { gradients_final(ports); };
  // A step's first forward reads each bucket's parameters once its
  // all-gather (started by the last optimizer step) has arrived.
  if (run_.cfg.overlap_param_gather)
    hooks_.params_needed = [this](const std::vector<std::string>& ports) { parameters_needed(ports); };
  if (run_.at.pp > 1)
    pipeline_ = std::make_unique<PipelineSchedule>(
        run_, [this](graph::Executable& exe, int64_t m) { prepare_micro_batch(exe, m, loss_scale_); }, hooks_);
}

StepResult Step::run() {
  StepResult result;
  result.iteration = run_.progress.iteration + 1;
  run_.begin_step();
  result.global_batch = run_.global_batch;
  const MixedPrecision& precision = run_.cfg.precision;
  // The scale this iteration's backward uses (updated at its end).
  const double loss_scale = run_.progress.loss_scale.scale;
  const double loss_sum = forward_backward(loss_scale);
  // The FP8 amaxes of every rank holding the same tensors: data-parallel
  // replicas and tensor-parallel shards (TE's amax reduction group).
  run_.progress.fp8.end_interval({run_.dp_group, run_.tp_owned.get()},
                                 "FP8 amax all-reduce at iteration " + std::to_string(result.iteration));
  sum_across_ranks(loss_sum, result);
  if (result.iteration == overflow_test_iteration_ && run_.comm.rank() == 0) poison_gradient();
  if (dump_) dump_->accumulators(*run_.state, result.iteration);
  result.grad_norm = gradient_norm(loss_scale);
  // Megatron's scheduler counts samples with --train-samples.
  const int64_t schedule_at = run_.cfg.sample_based() ? run_.progress.consumed : run_.progress.iteration;
  result.lr = run_.schedule->lr(schedule_at);
  if (run_.decoupled_schedule) result.decoupled_lr = run_.decoupled_schedule->lr(schedule_at);
  if (dump_) dump_->learning_rate(result.lr, result.iteration);
  const bool loss_finite = std::isfinite(result.loss);
  bool hopeless = false;  // a skip that a smaller loss scale cannot cure
  if (precision.scales_loss()) {
    // Megatron: an inf or NaN in any rank's gradients skips the step and
    // tells the scaler; only a non-finite loss counts as a nan iteration.
    const bool found_inf = gradients_overflowed(std::isfinite(result.grad_norm), result.iteration);
    result.skipped = found_inf || !loss_finite;
    result.nan = !loss_finite;
    hopeless = !loss_finite || !loss_scale_can_drop(run_.progress.loss_scale, precision);
    update_loss_scale(run_.progress.loss_scale, precision, found_inf);
  } else {
    result.skipped = !loss_finite || !std::isfinite(result.grad_norm);
    result.nan = hopeless = result.skipped;
  }
  if (result.skipped) {
    report_non_finite(result, loss_scale);
    skip(result, hopeless);
  } else
    update(result, loss_scale);
  run_.progress.iteration = result.iteration;
  run_.progress.consumed += result.global_batch;
  return result;
}

namespace {
// --calculate-per-token-loss with --eod-mask-loss: the kept tokens of
// `count` micro-batches of `split`, micro-batch i starting at sample
// first_sample(i) on this rank, summed over the data-parallel group (its
// ranks hold the other shares; a tensor-parallel group reads the same
// micro-batches, so each rank counts them once), before any of them runs:
// every token's loss weighs 1 over that count, as Megatron divides the
// summed gradients by the global batch's num_tokens.
template <class FirstSample>
int64_t global_kept_tokens(Setup& run, Split split, int64_t count, FirstSample first_sample, const std::string& what) {
  Batch scratch;
  double kept = 0;
  for (int64_t i = 0; i < count; ++i) {
    fill_batch(*run.data, split, first_sample(i), run.cfg.micro_batch_size, run.cfg.model.seq_length, scratch);
    kept += static_cast<double>(run.batch.documents->kept_tokens(scratch.tokens));
  }
  run.dp_group->sum(std::span<double>(&kept, 1), what);
  return static_cast<int64_t>(kept);
}
}  // namespace

// Gradients accumulate in place in the grad.* buffers. As Megatron's
// sampler, micro-batch m of the global batch is samples [m x B x DP, +B x DP),
// and rank r takes the r-th B of them.
double Step::forward_backward(double loss_scale) {
  const auto scale = static_cast<float>(loss_scale);
  at_iteration_ = " at iteration " + std::to_string(run_.progress.iteration + 1);
  pieces_begun_ = awaited_inside_ = 0;
  if (run_.cfg.weighs_tokens_globally())
    run_.batch.loss_tokens = global_kept_tokens(
        run_, Split::Train, run_.micro_batches, [&](int64_t m) { return micro_batch_sample(m); },
        "kept-token count all-reduce" + at_iteration_);
  if (!hooks_.params_needed) run_.finish_parameter_gather("the forward" + at_iteration_);
  double loss_sum = 0;
  if (pipeline_) {
    loss_scale_ = scale;
    loss_sum = pipeline_->train_step(run_.progress.iteration + 1);
  } else {
    for (int64_t m = 0; m < run_.micro_batches; ++m) {
      ChunkSteps& steps = run_.chunks.front();
      graph::Executable& train_step = m == 0 ? *steps.first_micro_batch : *steps.next_micro_batch;
      prepare_micro_batch(train_step, m, scale);
      if (dump_ && m == 0) dump_->parameters(*run_.state, run_.progress.iteration + 1);
      train_step.run(m == run_.micro_batches - 1 ? hooks_.grads_final : nullptr,
                     m == 0 ? hooks_.params_needed : nullptr);
      run_.progress.fp8.record(train_step);
      if (dump_) dump_->micro_batch(train_step, *run_.state, run_.progress.iteration + 1);
      const float loss = read_scalar(train_step, "loss");
      if (batch_dump_) batch_dump_->loss(loss);
      loss_sum += loss;
    }
  }
  if (hooks_.params_needed) {
    // Every forward reads every parameter, so this finds none left.
    run_.finish_parameter_gather("the forward" + at_iteration_);
    logger().debug("parameter all-gather: {} of {} buckets awaited after the forward began", awaited_inside_,
                   run_.gradient_sync->buckets());
  }
  return loss_sum;
}

void Step::parameters_needed(const std::vector<std::string>& ports) {
  const size_t written = run_.gradient_sync->parameters_needed(ports, "parameter all-gather" + at_iteration_);
  if (pieces_begun_++ > 0) awaited_inside_ += written;
  run_.dp_group->progress();
}

bool Step::overlaps_grad_reduce() const { return run_.cfg.overlap_grad_reduce && run_.dp_group->size() > 1; }

void Step::gradients_final(const std::vector<std::string>& ports) {
  run_.gradient_sync->start_ready(ports);
  run_.dp_group->progress();
}

int64_t Step::micro_batch_sample(int64_t m) const {
  return run_.progress.consumed + (m * run_.at.dp + run_.at.dp_rank) * run_.cfg.micro_batch_size;
}

void Step::prepare_micro_batch(graph::Executable& exe, int64_t m, float loss_scale) {
  const TrainConfig& cfg = run_.cfg;
  const int64_t B = cfg.micro_batch_size;
  const int64_t first_sample = micro_batch_sample(m);
  fill_batch(*run_.data, Split::Train, first_sample, B, cfg.model.seq_length, run_.batch);
  if (batch_dump_) batch_dump_->batch(run_.progress.iteration + 1, m, run_.batch.tokens, run_.batch.targets);
  feed(exe, run_.batch, cfg.model, run_.at);
  feed_dropout_keys(exe, first_sample);
  run_.progress.fp8.feed(exe);
  if (cfg.precision.scales_loss() && has_input(exe, kLossScaleInput))
    exe.buffer(kLossScaleInput)->write(&loss_scale, sizeof loss_scale);
}

// A tied word embedding's gradient, summed over the data-parallel group,
// summed again over the first and last pipeline stage (with the
// distributed optimizer: each rank's part, the same elements on both
// stages, before it becomes the optimizer's input).
void Step::sum_tied_embedding_gradient(int64_t iteration) {
  if (!run_.embedding_group) return;
  run_.gradient_sync->sum_over(
      *run_.embedding_group, "embedding.word_embeddings.weight",
      "embedding gradient all-reduce (first and last stage) at iteration " + std::to_string(iteration));
}

// The masks of this micro-batch's samples at this iteration
// (trainer/model/dropout_keys.h).
void Step::feed_dropout_keys(graph::Executable& train_step, int64_t first_sample) {
  const GptConfig& model = run_.cfg.model;
  if (model.hidden_dropout <= 0.0f && model.attention_dropout <= 0.0f) return;
  const DropoutKeys keys = dropout_keys(model, static_cast<uint64_t>(run_.progress.rng_seed),
                                        run_.progress.iteration + 1, first_sample, run_.at.tp_rank);
  for (const auto& port : train_step.graph().inputs()) {
    const int64_t site = dropout_key_site(port.name);
    if (site < 0) continue;
    const std::array<int32_t, 5> key = keys.at_site(site);
    train_step.buffer(port.name)->write(key.data(), sizeof key);
  }
}

void Step::sum_across_ranks(double loss_sum, StepResult& result) {
  double shared[1 + JobControl::kSlots] = {run_.at.tp_rank == 0 ? loss_sum : 0.0};
  control_.local_requests(result.iteration, std::span<double, JobControl::kSlots>(shared + 1, JobControl::kSlots));
  run_.comm.start_sum(shared);
  run_.gradient_sync->start();
  const std::string at_iteration = " at iteration " + std::to_string(result.iteration);
  run_.comm.wait("loss all-reduce" + at_iteration);
  if (run_.dp_group != &run_.comm) run_.dp_group->wait("gradient all-reduce" + at_iteration);
  sum_tied_embedding_gradient(result.iteration);
  run_.gradient_sync->finish();
  result.loss = shared[0] / run_.batch_terms;
  result.request = control_.decide(std::span<const double, JobControl::kSlots>(shared + 1, JobControl::kSlots));
}

// Gradients were summed over micro-batches (and scaled by the loss scale):
// the norm of their unscaled mean.
double Step::gradient_norm(double loss_scale) {
  const auto stage_squares = [this] {
    double squares = 0;
    for (ChunkSteps& chunk : run_.chunks) {
      chunk.grad_norm->run();
      DeviceBuffer& parts = *chunk.grad_norm->buffer("grad_sq");
      std::vector<float> per_parameter(parts.size() / sizeof(float));
      parts.read(per_parameter.data(), parts.size());
      for (float sq : per_parameter) squares += sq;
    }
    return squares;
  };
  const double squares = run_.gradient_sync->squared_norm(
      stage_squares, run_.comm, run_.pp_group.get(),
      "gradient norm all-reduce at iteration " + std::to_string(run_.progress.iteration + 1));
  return std::sqrt(squares) / run_.batch_terms / loss_scale;
}

// One all-reduce of a flag over every rank: an overflow seen by one rank
// (its gradients, or a tensor-parallel shard's norm) skips the step on all.
bool Step::gradients_overflowed(bool finite_here, int64_t iteration) {
  double overflowed = finite_here ? 0.0 : 1.0;
  if (run_.comm.size() > 1)
    run_.comm.sum(std::span<double>(&overflowed, 1),
                  "gradient overflow flag all-reduce at iteration " + std::to_string(iteration));
  return overflowed > 0;
}

void Step::poison_gradient() {
  DeviceBuffer& grad = run_.state->buffer(grad_name(run_.state->params().front().name));
  if (run_.cfg.model.grad_dtype == KILN_BF16) {
    const uint16_t inf = 0x7f80;  // bf16 +inf
    grad.write(&inf, sizeof inf);
    return;
  }
  const float inf = std::numeric_limits<float>::infinity();
  grad.write(&inf, sizeof inf);
}

// Skipping needs no clean-up: the next step's first micro-batch overwrites
// the gradients. fp16 overflows that a smaller loss scale can cure do not
// count towards giving up.
void Step::skip(const StepResult& result, bool hopeless) {
  if (result.nan) ++run_.progress.nan_total;
  ++run_.progress.skipped_total;
  if (!hopeless) return;
  if (++nan_in_a_row_ >= 10)
    throw Error("loss or gradients were NaN/Inf for 10 iterations in a row (last at iteration " +
                std::to_string(result.iteration) + "); lower --lr or check the data");
}

// AdamW with the gradients clipped to --clip-grad and divided by the number
// of summed micro-batches and by the loss scale (fp16).
void Step::update(const StepResult& result, double loss_scale) {
  const TrainConfig& cfg = run_.cfg;
  nan_in_a_row_ = 0;
  const double norm = result.grad_norm;
  const double clip = cfg.clip_grad > 0 && norm > cfg.clip_grad ? cfg.clip_grad / (norm + 1e-6) : 1.0;
  const double step = static_cast<double>(result.iteration - run_.progress.optimizer_start);
  float hparams[5] = {static_cast<float>(result.lr), static_cast<float>(cfg.weight_decay),
                      static_cast<float>(1.0 / (1.0 - std::pow(cfg.adam_beta1, step))),
                      static_cast<float>(1.0 / (1.0 - std::pow(cfg.adam_beta2, step))),
                      static_cast<float>(clip / run_.batch_terms / loss_scale)};
  // bf16 gradients are clipped by a pass of their own, rounded to bf16 as
  // Megatron's (step_graphs.h); grad_scale then only divides out the sum.
  const bool clips_apart = cfg.model.clips_apart();
  const auto clip_factor = static_cast<float>(clip);
  if (clips_apart) hparams[4] = static_cast<float>(1.0 / run_.batch_terms / loss_scale);
  // Each model chunk's parameters (one chunk without the interleaved schedule).
  // --decoupled-lr: the same values with the decoupled group's rate, for
  // the chunks that hold the embedding or the output layer.
  float decoupled[5];
  std::copy(std::begin(hparams), std::end(hparams), std::begin(decoupled));
  decoupled[0] = static_cast<float>(result.decoupled_lr);
  for (ChunkSteps& chunk : run_.chunks) {
    chunk.optimizer->buffer("hparams")->write(hparams, sizeof(hparams));
    if (chunk.optimizer->graph().find_input(kDecoupledHparamsInput) != nullptr)
      chunk.optimizer->buffer(kDecoupledHparamsInput)->write(decoupled, sizeof(decoupled));
    if (clips_apart) chunk.optimizer->buffer(kClipInput)->write(&clip_factor, sizeof clip_factor);
    chunk.optimizer->run();
  }
  // With the distributed optimizer. Without --overlap-param-gather the
  // next step's forward would wait for each bucket in turn.
  run_.gradient_sync->start_parameter_gather();
  if (!cfg.overlap_param_gather)
    run_.gradient_sync->finish_parameter_gather("parameter all-gather at iteration " +
                                                std::to_string(result.iteration));
}

// Each data-parallel rank evaluates its share of --eval-iters global
// batches, the same samples at every evaluation (a tensor-parallel group
// shares its micro-batches and loss, counted once).
double evaluate(Setup& run) {
  run.finish_parameter_gather("evaluation");
  const TrainConfig& cfg = run.cfg;
  const Layout& at = run.at;
  double sum = 0;
  const int64_t B = cfg.micro_batch_size;
  auto prepare = [&](graph::Executable& exe, int64_t i) {
    fill_batch(*run.data, Split::Valid, (i * at.dp + at.dp_rank) * B, B, cfg.model.seq_length, run.batch);
    feed(exe, run.batch, cfg.model, at);
    run.progress.fp8.feed(exe);
  };
  const int64_t count = cfg.eval_micro_batches();
  // --calculate-per-token-loss: Megatron's validation loss is the token
  // mean over all evaluated batches too, so the sum is not divided below.
  const bool per_token = cfg.weighs_tokens_globally();
  if (per_token)
    run.batch.loss_tokens = global_kept_tokens(
        run, Split::Valid, count, [&](int64_t i) { return (i * at.dp + at.dp_rank) * B; },
        "validation kept-token count all-reduce");
  if (at.pp > 1) {
    PipelineSchedule pipeline(run, prepare);
    sum = pipeline.evaluate(count, prepare);
  } else {
    for (int64_t i = 0; i < count; ++i) {
      graph::Executable& eval = *run.chunks.front().eval;
      prepare(eval, i);
      eval.run();
      sum += read_scalar(eval, "loss");
    }
  }
  // Counted once: by a tensor-parallel group's first rank on the last stage.
  if (at.tp_rank != 0 || !at.last_stage()) sum = 0;
  run.comm.sum(std::span<double>(&sum, 1), "validation loss all-reduce");
  if (per_token) {
    run.batch.loss_tokens = 0;  // the next training step counts its own
    return sum;
  }
  return sum / static_cast<double>(count * at.dp);
}

}  // namespace kiln::trainer
