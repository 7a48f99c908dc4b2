#include "trainer/model/step_graphs.h"

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "graph/autodiff.h"
#include "graph/compile_units.h"
#include "graph/passes.h"
#include "graph/widen_gradients.h"

namespace kiln::trainer {

using graph::Graph;
using graph::ValueId;

namespace {
// x in f32: itself, or its exact widening (a bf16 gradient accumulator).
ValueId widened(Graph& g, ValueId x) { return g.value(x).dtype == KILN_F32 ? x : g.cast(x, KILN_F32); }

// The value of `dtype` that v is the exact f32 widening of (v a CAST of
// it), or -1.
ValueId widened_from(const Graph& g, ValueId v, kiln_dtype dtype) {
  const int producer = g.value(v).producer;
  if (producer < 0 || dtype == KILN_F32) return -1;
  const graph::Node& node = g.nodes()[static_cast<size_t>(producer)];
  if (node.op != KILN_OP_CAST || g.value(node.inputs[0]).dtype != dtype) return -1;
  return node.inputs[0];
}

// The compile unit of the nodes that act on one parameter alone (its
// update, norm square, gradient sum): its layer's parameter unit, so every
// layer's piece is one shared unit (graph/compile_units.h); the rest's
// parameters stay with the rest.
int32_t parameter_unit(const ParamSpec& s) {
  const int64_t layer = graph::parameter_layer(s.name);
  return layer < 0 ? graph::kRestUnit : graph::layer_parameter_unit(layer);
}

// A stage that hands its output on: backward starts from the next stage's
// gradient of it, as the derivative of sum(hidden_out x grad_hidden_out),
// whose gradient with respect to hidden_out is exactly grad_hidden_out.
ValueId handed_on_objective(Graph& g, const GptForward& f, int64_t elements) {
  ValueId out = g.reshape(f.hidden_out, {1, elements});
  ValueId grad_out =
      g.reshape(g.input(kGradHiddenOut, g.value(f.hidden_out).dtype, g.shape(f.hidden_out)), {elements, 1});
  return g.reshape(g.matmul(out, grad_out), {1});
}
}  // namespace

namespace {
// The delayed recipe's amaxes (trainer/model/fp8_recipe.h): each CAST_FP8
// whose scale is a tensor's scale input gets that tensor's amax output. A
// recomputed forward casts a tensor again, to the same amax: the first
// cast's is the port.
void expose_fp8_amaxes(Graph& g) {
  std::map<ValueId, std::string> tensor_of_scale;
  for (const graph::Port& p : g.inputs())
    if (std::string t = fp8_tensor_of_scale_port(p.name); !t.empty()) tensor_of_scale[p.value] = t;
  std::set<std::string> exposed;
  for (const graph::Node& n : g.nodes()) {
    if (n.op != KILN_OP_CAST_FP8) continue;
    const auto it = tensor_of_scale.find(n.inputs[1]);
    if (it != tensor_of_scale.end() && exposed.insert(it->second).second)
      g.output(fp8_amax_port(it->second), n.outputs[1]);
  }
}
}  // namespace

Graph build_train_step(const GptConfig& cfg, int64_t B, GradMode mode, bool expose_gradients) {
  Graph g;
  GptForward f = build_gpt_forward(g, cfg, B);
  ValueId loss = -1, objective = -1;
  if (cfg.post_process) {
    loss = gpt_loss(g, f, cfg, B);
    // fp16 loss scaling: backward starts from loss x scale, so small
    // gradients stay above f16's subnormals; the f32 accumulators hold the
    // scaled sums and the optimizer divides the scale out.
    objective = loss;
    if (cfg.compute_dtype == KILN_F16) objective = g.mul(loss, g.input(kLossScaleInput, KILN_F32, {1}));
  } else {
    objective = handed_on_objective(g, f, B * cfg.local_seq_length() * cfg.hidden_size);
  }
  std::vector<ParamSpec> specs = gpt_parameters(cfg);
  std::vector<ValueId> wrt;
  // The f32 main parameters: with a 16-bit compute dtype the gradient passes
  // back through the forward's CAST, so it arrives (and accumulates) in f32.
  for (const auto& s : specs) wrt.push_back(f.param_inputs.at(s.name));
  if (!cfg.pre_process) wrt.push_back(f.hidden_in);
  const size_t backward_begin = g.nodes().size();
  std::vector<ValueId> grads = graph::backward(g, objective, wrt, f.recompute_segments);
  // f16's range: parameter gradients are written in f32 (graph/widen_gradients.h).
  g = graph::widen_f16_parameter_gradients(g);
  if (loss >= 0) g.output("loss", loss);
  if (!cfg.pre_process) g.output(kGradHiddenIn, grads.back());
  if (cfg.fp8.enabled && !cfg.fp8.current) expose_fp8_amaxes(g);
  const size_t sums_begin = g.nodes().size();
  for (size_t i = 0; i < specs.size(); ++i) {
    const std::string acc = grad_name(specs[i].name);
    ValueId in = g.input(acc, cfg.grad_dtype, specs[i].shape);
    // Overwrite: the gradient's producer writes straight into the buffer.
    // bf16 accumulators (--main-grads-dtype bf16): the f32 sum of the
    // accumulator and this micro-batch's f32 gradient, rounded once, as
    // Megatron's main_grad.add_(param.grad) on a bf16 main_grad. Where the
    // gradient is a bf16 value widened (a weight's MATMUL, a bias's SUM_TO),
    // the bf16 ADD of the two is that same value (f32 arithmetic, one
    // rounding) with no f32 copy of either, and the first micro-batch's
    // producer writes the buffer itself.
    ValueId sum = grads[i];
    const ValueId narrow = widened_from(g, grads[i], cfg.grad_dtype);
    if (cfg.grad_dtype != KILN_F32 && narrow >= 0) {
      sum = mode == GradMode::Accumulate ? g.add(in, narrow) : narrow;
    } else {
      if (mode == GradMode::Accumulate) sum = g.add(widened(g, in), grads[i]);
      if (cfg.grad_dtype != KILN_F32) sum = g.cast(sum, cfg.grad_dtype);
    }
    g.output(updated(acc), sum, acc);
    // A port needs a value of its own: where the accumulator's output is the
    // gradient itself (f32, the first micro-batch) the dump reads an exact
    // copy (x 1).
    if (expose_gradients)
      g.output(micro_grad_name(specs[i].name), sum == grads[i] ? g.scale(grads[i], 1.0f) : grads[i]);
  }
  // Each sum runs right after its gradient is made, in that layer's
  // backward unit: the layer's gradients are final when its piece ends.
  g = graph::place_after_producers(g, sums_begin);
  // The 16-bit weight copies then live through their layer's forward and
  // its backward, not the whole step (docs/MIXED_PRECISION.md, "Memory").
  if (cfg.compute_dtype != KILN_F32) return graph::rematerialize_input_casts(g, backward_begin);
  return g;
}

Graph build_eval_step(const GptConfig& cfg, int64_t B) {
  if (!cfg.post_process) return build_stage_forward(cfg.without_dropout(), B);
  Graph g;
  const GptConfig eval = cfg.without_dropout();
  GptForward f = build_gpt_forward(g, eval, B);
  g.output("loss", gpt_loss(g, f, eval, B));
  return g;
}

Graph build_stage_forward(const GptConfig& cfg, int64_t B) {
  Graph g;
  GptForward f = build_gpt_forward(g, cfg, B);
  g.output(kHiddenOut, f.hidden_out);
  return g;
}

namespace {
// xs joined along axis 0, in order; CONCAT takes at most 255 inputs (the
// IR's u8 count), so longer lists are joined in groups, then the groups.
ValueId concat_all(Graph& g, std::vector<ValueId> xs) {
  constexpr size_t kMaxInputs = 255;
  while (xs.size() > 1) {
    std::vector<ValueId> groups;
    for (size_t i = 0; i < xs.size(); i += kMaxInputs) {
      const size_t end = std::min(xs.size(), i + kMaxInputs);
      std::vector<ValueId> part(xs.begin() + static_cast<std::ptrdiff_t>(i),
                                xs.begin() + static_cast<std::ptrdiff_t>(end));
      groups.push_back(part.size() == 1 ? part[0] : g.concat(part, 0));
    }
    xs = std::move(groups);
  }
  return xs.at(0);
}
}  // namespace

bool counted_in_grad_norm(const GptConfig& cfg, const ParamSpec& param) {
  return cfg.pre_process || param.name != "embedding.word_embeddings.weight";
}

Graph build_grad_norm(const GptConfig& cfg) {
  Graph g;
  // One sum of squares per parameter, summed by the host in double in
  // parameter order: the norm then does not depend on how the parameters
  // are split over pipeline stages (an f32 sum per stage would round
  // differently from one f32 sum, and the clipping factor with it). With
  // tensor parallelism, shards' squares are summed over the group (one
  // all-reduce of all of them) and replicated parameters counted once.
  // A layer's squares are joined inside its own unit (one vector per layer
  // and kind), so each layer's piece is the same unit and only the final
  // joins, which keep the parameter order, see the depth.
  std::vector<ValueId> sharded, replicated;
  std::vector<ValueId> layer_sharded, layer_replicated;
  auto end_layer = [&] {
    if (!layer_sharded.empty()) sharded.push_back(concat_all(g, layer_sharded));
    if (!layer_replicated.empty()) replicated.push_back(concat_all(g, layer_replicated));
    layer_sharded.clear();
    layer_replicated.clear();
  };
  int32_t unit = graph::kRestUnit;
  for (const auto& s : gpt_parameters(cfg)) {
    if (!counted_in_grad_norm(cfg, s)) continue;
    if (parameter_unit(s) != unit) {
      end_layer();
      unit = parameter_unit(s);
      g.set_unit(unit);
    }
    // A bf16 gradient is read widened and its squares summed in f32 or
    // wider (Megatron's fp32 norm of its bf16 main grads), with no f32 copy.
    ValueId sq = g.sum_squares(g.input(grad_name(s.name), cfg.grad_dtype, s.shape));
    (s.shard_dim >= 0 && cfg.tensor_parallel > 1 ? layer_sharded : layer_replicated).push_back(sq);
  }
  end_layer();
  g.set_unit(graph::kRestUnit);
  if (!sharded.empty()) replicated.push_back(g.all_reduce(concat_all(g, sharded), KILN_GROUP_TP));
  g.output("grad_sq", concat_all(g, replicated));
  return g;
}

namespace {
// AdamW on parameter s (at param_port) or its shard, each tensor of `shape`,
// with its gradient at grad_port; the updates are outputs in place. A bf16
// gradient (--main-grads-dtype bf16) goes to ADAMW_CLIP with the clip factor
// ("clip" [1]): multiplied by it and rounded back to bf16, as Megatron's
// clip_grad_by_total_norm_fp32 scales the bf16 main grads in place
// (multi_tensor_scale: an f32 product, stored in bf16), then widened,
// exactly, as TE's FusedAdam reads a bf16 gradient, all inside the kernel,
// so no f32 copy of the gradient exists. grad_scale then divides out the
// micro-batch and rank count (and no clip factor). With --grad-reduce-in-bf16
// alone the optimizer reads an f32 copy (a CAST) and clips it in f32 inside
// grad_scale, as Megatron's `main_param.grad = main_grad.float()`.
void adamw_of(Graph& g, const GptConfig& cfg, const AdamWConfig& adam, const ParamSpec& s,
              const std::string& param_port, const std::string& grad_port, ValueId hp, const graph::Shape& shape) {
  ValueId p = g.input(param_port, KILN_F32, shape);
  ValueId grad = g.input(grad_port, cfg.grad_dtype, shape);
  ValueId m = g.input(exp_avg_name(s.name), KILN_F32, shape);
  ValueId v = g.input(exp_avg_sq_name(s.name), KILN_F32, shape);
  const std::vector<ValueId> out =
      cfg.clips_apart() ? g.adamw_clip(p, grad, m, v, hp, g.find_input(kClipInput)->value, adam.beta1, adam.beta2,
                                       adam.eps, s.weight_decay)
                        : g.adamw(p, widened(g, grad), m, v, hp, adam.beta1, adam.beta2, adam.eps, s.weight_decay);
  g.output(updated(param_port), out[0], param_port);
  g.output(updated(exp_avg_name(s.name)), out[1], exp_avg_name(s.name));
  g.output(updated(exp_avg_sq_name(s.name)), out[2], exp_avg_sq_name(s.name));
}

// The optimizer graph's shared inputs, and which hyper-parameters a parameter reads.
struct OptimizerInputs {
  ValueId hparams = -1, decoupled = -1;
  OptimizerInputs(Graph& g, const GptConfig& cfg, const AdamWConfig& adam) {
    hparams = g.input("hparams", KILN_F32, {5});
    if (cfg.clips_apart()) g.input(kClipInput, KILN_F32, {1});
    const std::vector<ParamSpec> specs = gpt_parameters(cfg);
    // A middle pipeline stage holds neither, and gets no such input.
    if (adam.decoupled_lr &&
        std::any_of(specs.begin(), specs.end(), [](const ParamSpec& s) { return s.embedding_or_output; }))
      decoupled = g.input(kDecoupledHparamsInput, KILN_F32, {5});
  }
  ValueId of(const ParamSpec& s) const { return s.embedding_or_output && decoupled >= 0 ? decoupled : hparams; }
};
}  // namespace

Graph build_optimizer_step(const GptConfig& cfg, const AdamWConfig& adam) {
  Graph g;
  const OptimizerInputs in(g, cfg, adam);
  for (const auto& s : gpt_parameters(cfg)) {
    g.set_unit(parameter_unit(s));
    adamw_of(g, cfg, adam, s, s.name, grad_name(s.name), in.of(s), s.shape);
  }
  return g;
}

Graph build_sharded_optimizer_step(const GptConfig& cfg, const AdamWConfig& adam, int64_t data_parallel) {
  Graph g;
  const OptimizerInputs in(g, cfg, adam);
  for (const auto& s : gpt_parameters(cfg)) {
    g.set_unit(parameter_unit(s));
    const graph::Shape part = {shard_elements(graph::numel(s.shape), data_parallel)};
    adamw_of(g, cfg, adam, s, main_param_name(s.name), grad_shard_name(s.name), in.of(s), part);
  }
  return g;
}

Graph build_generate(const GptConfig& cfg) {
  Graph g;
  GptForward f = build_gpt_forward(g, cfg.without_dropout(), 1);
  g.output("logits", f.logits);
  return g;
}

}  // namespace kiln::trainer
