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
};

inline std::string grad_name(const std::string& p) { return "grad." + p; }
inline std::string exp_avg_name(const std::string& p) { return "exp_avg." + p; }
inline std::string exp_avg_sq_name(const std::string& p) { return "exp_avg_sq." + p; }
inline std::string updated(const std::string& port) { return port + ".out"; }

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
graph::Graph build_train_step(const GptConfig& cfg, int64_t micro_batch, GradMode mode = GradMode::Accumulate);

// Forward only: "loss" [1].
graph::Graph build_eval_step(const GptConfig& cfg, int64_t micro_batch);

// Sum of squares of every gradient accumulator: "grad_sq" [1].
graph::Graph build_grad_norm(const GptConfig& cfg);

// AdamW on every parameter with hyper-parameters from the "hparams" input
// ({lr, weight_decay, 1/(1-b1^t), 1/(1-b2^t), grad_scale}).
graph::Graph build_optimizer_step(const GptConfig& cfg, const AdamWConfig& adam);

// Logits for one sequence: "tokens" [1, T] -> "logits" [T, V].
graph::Graph build_generate(const GptConfig& cfg);

}  // namespace kiln::trainer
