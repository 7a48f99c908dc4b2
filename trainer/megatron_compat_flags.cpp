#include "trainer/megatron_compat_flags.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <string>

#include "core/error.h"
#include "core/log.h"
#include "trainer/megatron_compat_rows.h"
#include "trainer/model/gpt.h"

namespace kiln::trainer {

namespace {

using Arity = CompatArity;
using Kind = CompatKind;
using Value = CompatValue;
using Words = std::vector<std::string>;

CompatFlag switch_row(const std::string& name, Kind kind, const std::string& why) {
  return {name, Arity::Switch, Value::None, {}, kind, {}, why, "", ""};
}
CompatFlag value_row(const std::string& name, Value value, const Words& choices, Kind kind, const std::string& why) {
  return {name, Arity::One, value, choices, kind, {}, why, "", ""};
}
CompatFlag kiln_value_row(const std::string& name, Value value, const Words& choices, const Words& kiln_values,
                          const std::string& why) {
  return {name, Arity::One, value, choices, Kind::KilnValue, kiln_values, why, "", ""};
}
CompatFlag many_row(const std::string& name, Value value, const Words& choices, Kind kind, const std::string& why) {
  return {name, Arity::Many, value, choices, kind, {}, why, "", ""};
}

// The reasons several rows share.
const char* const kLoader =
    "kiln reads the samples itself from the memory-mapped .bin; loader workers and builder threads change speed "
    "only";
const char* const kPipelineOrder =
    "a pipeline-schedule detail of when weight gradients or p2p sends run; the gradients are the same";
const char* const kWandb =
    "kiln has no Weights & Biases client, so nothing is sent to W&B; --tensorboard-dir writes TensorBoard event "
    "files";
// Megatron's --profile is kiln's own flag (TrainConfig): the run profile of
// every step, on every rank; the flags that steer nsys or PyTorch have no effect.
const char* const kProfile =
    "kiln has no nsys or PyTorch profiler hooks; kiln's --profile times every step on every rank";
const char* const kMoments = "kiln keeps the AdamW moments in fp32";

std::vector<CompatFlag> make_rows() {
  const Words moment_dtypes = {"fp32", "fp16", "bf16", "fp8"};
  return {
      // Implementation choices: the same computation in kiln.
      switch_row("--use-mcore-models", Kind::NoEffect,
                 "Megatron ignores it too (core models are its default); kiln has one model implementation"),
      value_row("--transformer-impl", Value::Text, {"local", "transformer_engine", "inference_optimized"},
                Kind::NoEffect, "kiln has one transformer layer implementation; Megatron's compute the same layer"),
      switch_row("--use-flash-attn", Kind::NoEffect,
                 "Megatron's older switch for --attention-backend flash; kiln's --attention-backend auto (the "
                 "default) already uses a backend's fused attention kernel where it has one"),
      switch_row("--no-masked-softmax-fusion", Kind::NoEffect, kOneKernel),
      switch_row("--no-rope-fusion", Kind::NoEffect, kOneKernel),
      switch_row("--no-bias-gelu-fusion", Kind::NoEffect, kOneKernel),
      switch_row("--no-bias-swiglu-fusion", Kind::NoEffect, kOneKernel),
      switch_row("--no-bias-dropout-fusion", Kind::NoEffect, kOneKernel),
      switch_row("--no-gradient-accumulation-fusion", Kind::NoEffect, kOneKernel),
      switch_row("--no-persist-layer-norm", Kind::NoEffect, kOneKernel),
      switch_row("--cross-entropy-loss-fusion", Kind::NoEffect, kOneKernel),
      value_row("--cross-entropy-fusion-impl", Value::Text, {"native", "te"}, Kind::NoEffect, kOneKernel),
      switch_row("--manual-gc", Kind::NoEffect, kNoGc),
      value_row("--manual-gc-interval", Value::Int, {}, Kind::NoEffect, kNoGc),
      switch_row("--no-manual-gc-eval", Kind::NoEffect, kNoGc),
      value_row("--num-workers", Value::Int, {}, Kind::NoEffect, kLoader),
      value_row("--num-dataset-builder-threads", Value::Int, {}, Kind::NoEffect, kLoader),
      switch_row("--no-mmap-bin-files", Kind::NoEffect,
                 "kiln always memory-maps the .bin; the tokens read are the same"),
      switch_row("--no-create-attention-mask-in-dataloader", Kind::NoEffect,
                 "kiln applies the causal mask inside attention; its data loader never builds a mask"),
      value_row("--empty-unused-memory-level", Value::Int, {"0", "1", "2"}, Kind::NoEffect,
                "empties PyTorch's caching allocator; kiln has none"),
      switch_row("--async-save", Kind::NoEffect,
                 "kiln writes checkpoints synchronously: the same files, training waits while they are written"),
      switch_row("--defer-embedding-wgrad-compute", Kind::NoEffect, kPipelineOrder),
      value_row("--wgrad-deferral-limit", Value::Int, {}, Kind::NoEffect, kPipelineOrder),
      switch_row("--overlap-p2p-communication-warmup-flush", Kind::NoEffect, kPipelineOrder),
      switch_row("--no-check-for-nan-in-loss-and-grad", Kind::NoEffect,
                 "kiln always skips a step whose loss or gradients are NaN/Inf and stops after 10 in a row"),
      value_row("--tiktoken-pattern", Value::Text, {"v1", "v2"}, Kind::NoEffect,
                "applies only to --tokenizer-type TikTokenizer, which kiln does not have (it refuses that type)"),
      {"--no-position-embedding",
       Arity::Switch,
       Value::None,
       {},
       Kind::NoEffect,
       {},
       "deprecated in Megatron, which allows it only with rope, where there is no position table to drop",
       "--position-embedding-type",
       to_string(PositionEmbedding::Rope)},
      // Accepted with the value that says what kiln does.
      kiln_value_row("--main-params-dtype", Value::Text, {"fp32", "fp16"}, {"fp32"},
                     "kiln keeps the main parameters in fp32 (docs/MIXED_PRECISION.md)"),
      kiln_value_row("--exp-avg-dtype", Value::Text, moment_dtypes, {"fp32"}, kMoments),
      kiln_value_row("--exp-avg-sq-dtype", Value::Text, moment_dtypes, {"fp32"}, kMoments),
      kiln_value_row("--optimizer", Value::Text, {"adam", "sgd", "muon", "dist_muon", "lion", "soap", "adaptive_muon"},
                     {"adam"}, "kiln's optimizer is AdamW, which is Megatron's adam (decoupled weight decay)"),
      kiln_value_row("--dataloader-type", Value::Text, {"single", "cyclic", "external"}, {"single"},
                     "kiln reads training samples in order from the consumed-samples count, as Megatron's single "
                     "sampler"),
      kiln_value_row("--context-parallel-size", Value::Int, {}, {"1"},
                     "kiln has no context parallelism (each rank holds whole sequences)"),
      kiln_value_row("--expert-model-parallel-size", Value::Int, {}, {"1"}, kMoe),
      // Outputs kiln does not produce: the training is the same, a warning says what is missing.
      value_row("--wandb-project", Value::Text, {}, Kind::NotProvided, kWandb),
      value_row("--wandb-exp-name", Value::Text, {}, Kind::NotProvided, kWandb),
      value_row("--wandb-save-dir", Value::Text, {}, Kind::NotProvided, kWandb),
      value_row("--wandb-entity", Value::Text, {}, Kind::NotProvided, kWandb),
      value_row("--profile-step-start", Value::Int, {}, Kind::NotProvided, kProfile),
      value_row("--profile-step-end", Value::Int, {}, Kind::NotProvided, kProfile),
      many_row("--profile-ranks", Value::Int, {}, Kind::NotProvided, kProfile),
      switch_row("--use-pytorch-profiler", Kind::NotProvided, kProfile),
      switch_row("--log-progress", Kind::NotProvided, "kiln writes no progress.txt (Megatron's job progress file)"),
      switch_row("--log-timers-to-tensorboard", Kind::NotProvided, "kiln writes no timers to TensorBoard"),
      switch_row("--log-memory-to-tensorboard", Kind::NotProvided, "kiln writes no memory statistics to TensorBoard"),
      switch_row("--no-log-loss-scale-to-tensorboard", Kind::NotProvided,
                 "kiln writes the loss scale to TensorBoard in every --bf16/--fp16 run"),
      value_row("--ckpt-format", Value::Text, {"torch", "torch_dist", "torch_dcp", "fsdp_dtensor"}, Kind::NotProvided,
                "kiln writes its own checkpoint format to --save (docs/CHECKPOINTS.md): kiln --load resumes from it, "
                "Megatron cannot"),
      // Flags of Megatron's 2021-2023 launch scripts (examples/pretrain_gpt.sh), gone from its arguments since.
      kiln_value_row("--data-impl", Value::Text, {"lazy", "cached", "mmap", "infer"}, {"mmap", "infer"},
                     "kiln reads Megatron's mmap .bin/.idx (infer: the .idx header says which, and kiln checks it "
                     "is MMIDIDX); the lazy and cached formats are not read"),
      value_row("--distributed-backend", Value::Text, {"nccl", "gloo"}, Kind::NoEffect,
                "picks torch.distributed's backend; kiln's ranks communicate over MPI (mpirun) with any choice"),
      // Features kiln lacks.
      value_row("--num-experts", Value::Int, {}, Kind::Refused, kMoe),
      value_row("--moe-router-topk", Value::Int, {}, Kind::Refused, kMoe),
      many_row("--moe-router-load-balancing-type", Value::Text,
               {"aux_loss", "seq_aux_loss", "global_aux_loss", "sinkhorn", "quantile_balancing", "none"}, Kind::Refused,
               kMoe),
      many_row("--moe-aux-loss-coeff", Value::Number, {}, Kind::Refused, kMoe),
      switch_row("--moe-grouped-gemm", Kind::Refused, kMoe),
      value_row("--moe-token-dispatcher-type", Value::Text, {"allgather", "alltoall", "flex"}, Kind::Refused, kMoe),
      value_row("--moe-ffn-hidden-size", Value::Int, {}, Kind::Refused, kMoe),
  };
}

std::string joined(const Words& words, const char* sep) {
  std::string out;
  for (const std::string& w : words) {
    if (!out.empty()) out += sep;
    out += w;
  }
  return out;
}

bool is_int(const std::string& v) {
  int64_t x = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  return ec == std::errc() && p == v.data() + v.size();
}

bool is_number(const std::string& v) {
  double x = 0;
  auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  return ec == std::errc() && p == v.data() + v.size() && std::isfinite(x);
}

// Integers compare by value, so "--context-parallel-size 01" is 1.
bool same_value(const CompatFlag& row, const std::string& a, const std::string& b) {
  if (row.value == Value::Int && is_int(a) && is_int(b)) return std::stoll(a) == std::stoll(b);
  return a == b;
}

void check_value(const CompatFlag& row, const std::string& v) {
  std::string given = row.name;
  given += " ";
  given += v;
  if (row.value == Value::Int && !is_int(v)) throw Error(row.name + " expects an integer, got '" + v + "'");
  if (row.value == Value::Number && !is_number(v)) throw Error(row.name + " expects a number, got '" + v + "'");
  if (!row.choices.empty() &&
      std::none_of(row.choices.begin(), row.choices.end(), [&](const std::string& c) { return same_value(row, c, v); }))
    throw Error(given + ": not one of Megatron's choices (" + joined(row.choices, ", ") + ")");
}

std::string with_values(const std::string& name, const Words& values) {
  std::string out = name;
  for (const std::string& v : values) {
    out += " ";
    out += v;
  }
  return out;
}

}  // namespace

const std::vector<CompatFlag>& megatron_compat_flags() {
  // The hand-written rows first (what launch scripts pass most), then the
  // rest of Megatron's argument list by topic (trainer/megatron_compat_rows.h).
  static const std::vector<CompatFlag> rows = [] {
    std::vector<CompatFlag> all = make_rows();
    for (auto* topic : {compat_perf_rows, compat_model_rows, compat_parallel_rows, compat_data_rows,
                        compat_runtime_rows, compat_scripts_rows, compat_legacy_rows}) {
      std::vector<CompatFlag> more = topic();
      all.insert(all.end(), more.begin(), more.end());
    }
    return all;
  }();
  return rows;
}

std::string describe_kind(const CompatFlag& row) {
  switch (row.kind) {
    case Kind::NoEffect: return "no effect";
    case Kind::KilnValue: {
      std::string kind = "only ";
      kind += joined(row.kiln_values, " or ");
      return kind;
    }
    case Kind::NotProvided: return "warns: not provided";
    case Kind::Refused: return "refused";
  }
  return "";
}

std::string compat_flags_markdown() {
  std::string out = "| flag | values | in kiln | why |\n|---|---|---|---|\n";
  for (const CompatFlag& row : megatron_compat_flags()) {
    std::string values;
    if (row.arity == Arity::Switch) values = "switch";
    if (row.arity != Arity::Switch)
      values = row.choices.empty() ? (row.value == Value::Int      ? "N"
                                      : row.value == Value::Number ? "X"
                                                                   : "S")
                                   : joined(row.choices, " \\| ");
    if (row.arity == Arity::Many) values += " ...";
    std::string kind = describe_kind(row);
    if (!row.needs_flag.empty()) {
      kind += " (with ";
      kind += row.needs_flag;
      kind += " ";
      kind += row.needs_value;
      kind += ")";
    }
    out += "| `";
    out += row.name;
    out += "` | ";
    out += values;
    out += " | ";
    out += kind;
    out += " | ";
    out += row.why;
    out += " |\n";
  }
  return out;
}

namespace {
// --help's stand-in for the rows: how many of each kind, and where they are listed.
std::string compat_summary() {
  int counts[4] = {0, 0, 0, 0};
  for (const CompatFlag& row : megatron_compat_flags()) ++counts[static_cast<int>(row.kind)];
  return fmt::format(
      "  {} rows: {} no effect (an implementation detail kiln has one of), {} only the value kiln implements,\n"
      "  {} warn (an output kiln does not produce), {} refused (a feature kiln lacks).\n"
      "  kiln train --help-all lists each with its reason; docs/MEGATRON_FLAGS.md is the same table.",
      megatron_compat_flags().size(), counts[static_cast<int>(Kind::NoEffect)],
      counts[static_cast<int>(Kind::KilnValue)], counts[static_cast<int>(Kind::NotProvided)],
      counts[static_cast<int>(Kind::Refused)]);
}
}  // namespace

void MegatronCompatFlags::register_flags(Flags& f) {
  f.section(
      "Megatron flags accepted for compatibility (no effect, only the value kiln implements, warned, or refused; "
      "docs/MEGATRON_FLAGS.md)",
      compat_summary());
  for (const CompatFlag& row : megatron_compat_flags()) {
    Slot& slot = slots_[row.name];
    std::string help = "[";
    help += describe_kind(row);
    help += "] ";
    help += row.why;
    if (!row.choices.empty()) {
      help += " (Megatron's choices: ";
      help += joined(row.choices, ", ");
      help += ")";
    }
    switch (row.arity) {
      case Arity::Switch: f.add(row.name, &slot.on, help); break;
      case Arity::One: f.add(row.name, &slot.one, help); break;
      case Arity::Many: f.add(row.name, &slot.many, help); break;
    }
  }
  f.section("");
}

std::vector<std::string> MegatronCompatFlags::values_of(const CompatFlag& row) const {
  const Slot& slot = slots_.at(row.name);
  if (row.arity == Arity::One) return {slot.one};
  if (row.arity == Arity::Many) return slot.many;
  return {};
}

std::vector<std::string> MegatronCompatFlags::accepted_without_effect(const Flags& f) const {
  std::vector<std::string> out;
  for (const CompatFlag& row : megatron_compat_flags())
    if (f.given(row.name) && (row.kind == Kind::NoEffect || row.kind == Kind::KilnValue))
      out.push_back(with_values(row.name, values_of(row)));
  return out;
}

void MegatronCompatFlags::finalize(const Flags& f) const {
  const auto flag_values = f.values();
  std::vector<std::pair<std::string, Words>> warnings;  // (why, flags), in table order
  for (const CompatFlag& row : megatron_compat_flags()) {
    if (!f.given(row.name)) continue;
    const Words values = values_of(row);
    const std::string given = with_values(row.name, values);
    if (row.kind == Kind::Refused) throw Error(given + ": " + row.why + "; drop the flag");
    for (const std::string& v : values) check_value(row, v);
    if (row.kind == Kind::KilnValue &&
        std::none_of(row.kiln_values.begin(), row.kiln_values.end(),
                     [&](const std::string& k) { return same_value(row, k, values.at(0)); }))
      throw Error(given + ": " + row.why + "; use " + row.name + " " + joined(row.kiln_values, " or ") +
                  " or drop the flag");
    if (!row.needs_flag.empty()) {
      auto it = std::find_if(flag_values.begin(), flag_values.end(),
                             [&](const auto& nv) { return nv.first == row.needs_flag; });
      if (it == flag_values.end() || it->second != row.needs_value)
        throw Error(row.name + " needs " + row.needs_flag + " " + row.needs_value + " (" + row.why + ")");
    }
    if (row.kind == Kind::NotProvided) {
      auto w = std::find_if(warnings.begin(), warnings.end(), [&](const auto& p) { return p.first == row.why; });
      if (w == warnings.end()) w = warnings.insert(warnings.end(), {row.why, {}});
      w->second.push_back(given);
    }
  }
  if (const Words quiet = accepted_without_effect(f); !quiet.empty())
    logger().info("Megatron flags accepted with no effect in kiln (docs/CLI.md): {}", joined(quiet, ", "));
  for (const auto& [why, names] : warnings) logger().warn("{} ignored: {}", joined(names, ", "), why);
}

}  // namespace kiln::trainer
