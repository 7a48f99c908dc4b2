// Every graph a training run executes. Each is a pure function of the
// config, so precompile can build the same set without running anything.
//
// Persistent tensors cross graphs by port name:
//   <param>            parameters
//   grad.<param>       gradient accumulators (summed over micro-batches)
//   exp_avg.<param>    AdamW first moment
//   exp_avg_sq.<param> AdamW second moment
// Outputs that update one of these in place are named "<port>.out".
#pragma once

#include <string>
#include <vector>

#include "graph/graph.h"
#include "trainer/model/gpt.h"

namespace kiln::trainer {

struct AdamWConfig {
  float beta1 = 0.9f;
  float beta2 = 0.999f;
  float eps = 1e-8f;
  // --decoupled-lr: the embedding and output parameters read their
  // hyper-parameters from kDecoupledHparamsInput (its own lr) instead.
  bool decoupled_lr = false;
};

inline std::string grad_name(const std::string& p) { return "grad." + p; }
inline std::string exp_avg_name(const std::string& p) { return "exp_avg." + p; }
inline std::string exp_avg_sq_name(const std::string& p) { return "exp_avg_sq." + p; }
inline std::string updated(const std::string& port) { return port + ".out"; }
// The distributed optimizer (--use-distributed-optimizer): data-parallel
// rank r owns elements [r x c, (r+1) x c) of every parameter, c the
// parameter's size divided by the data-parallel size, rounded up (the last
// rank's part is zero-padded). It holds main.<param> (its part of the fp32
// parameter), grad_shard.<param> (its part of the reduced gradient) and the
// moments exp_avg.<param>, exp_avg_sq.<param> of that part only.
inline std::string main_param_name(const std::string& p) { return "main." + p; }
inline std::string grad_shard_name(const std::string& p) { return "grad_shard." + p; }
inline int64_t shard_elements(int64_t numel, int64_t data_parallel) {
  return (numel + data_parallel - 1) / data_parallel;
}

// How a micro-batch's gradients reach the grad.* buffers: the first
// micro-batch of a step overwrites them (so nothing ever has to zero them),
// later ones add to them.
enum class GradMode { Overwrite, Accumulate };

// The loss scale input [1] f32 of an fp16 train step (cfg.compute_dtype f16).
inline constexpr const char* kLossScaleInput = "loss_scale";

// Forward + backward of one micro-batch: inputs params, "tokens" [B, T],
// "targets" [B, T], grad buffers, and with f16 compute "loss_scale" [1];
// outputs "loss" [1] (unscaled) and every grad buffer updated in place
// (grad = or += d (loss x loss_scale) / d param, in f32).
// expose_gradients (the KILN_TEST_DUMP_GRADIENTS hook, trainer/gradient_dump.h):
// also output each parameter's f32 gradient of this micro-batch, before it
// is added to its accumulator, as "micro_grad.<param>".
graph::Graph build_train_step(const GptConfig& cfg, int64_t micro_batch, GradMode mode = GradMode::Accumulate,
                              bool expose_gradients = false);
inline std::string micro_grad_name(const std::string& p) { return "micro_grad." + p; }

// Forward only: "loss" [1] (a pipeline stage before the last: "hidden_out").
graph::Graph build_eval_step(const GptConfig& cfg, int64_t micro_batch);

// Pipeline parallelism (cfg a stage, docs/DISTRIBUTED.md). A stage before the
// last runs, per micro-batch, this forward ("tokens" or "hidden_in" ->
// "hidden_out" [B*T, C]) and later its train step, which recomputes the
// forward and takes the next stage's "grad_hidden_out" as the gradient to
// start from. Every stage but the first has its train step output
// "grad_hidden_in", the gradient to send back.
inline constexpr const char* kHiddenOut = "hidden_out";
inline constexpr const char* kGradHiddenOut = "grad_hidden_out";
inline constexpr const char* kGradHiddenIn = "grad_hidden_in";
graph::Graph build_stage_forward(const GptConfig& cfg, int64_t micro_batch);

// Whether a parameter of this stage counts in the gradient norm: all but the
// last pipeline stage's copy of a tied word embedding, which the first
// stage counts (the two copies hold the same summed gradient).
bool counted_in_grad_norm(const GptConfig& cfg, const ParamSpec& param);

// Sums of squares of the gradient accumulators: "grad_sq" [n] f32, one per
// parameter (tensor-parallel shards' summed over the group, after the
// replicated ones), for the host to add up in double (a pipeline stage's
// parameters; the last stage leaves out its copy of a tied word embedding).
graph::Graph build_grad_norm(const GptConfig& cfg);

// AdamW on every parameter with hyper-parameters from the "hparams" input
// ({lr, weight_decay, 1/(1-b1^t), 1/(1-b2^t), grad_scale}). With bf16
// gradients clipped as stored (cfg.clips_apart()) also "clip" [1], the clip
// factor applied to the bf16 gradients before AdamW reads them (grad_scale
// then leaves it out).
inline constexpr const char* kClipInput = "clip";
// With AdamWConfig::decoupled_lr: the same five values with the decoupled
// schedule's lr, for the parameters with ParamSpec::embedding_or_output.
inline constexpr const char* kDecoupledHparamsInput = "hparams.decoupled";
graph::Graph build_optimizer_step(const GptConfig& cfg, const AdamWConfig& adam);

// The same on one data-parallel rank's part of every parameter (the ports
// above, each of shard_elements(numel, data_parallel) elements). The graph
// is the same on every rank, so they share compile-cache entries.
graph::Graph build_sharded_optimizer_step(const GptConfig& cfg, const AdamWConfig& adam, int64_t data_parallel);

// Logits for one sequence: "tokens" [1, T] -> "logits" [T, V].
graph::Graph build_generate(const GptConfig& cfg);

}  // namespace kiln::trainer
