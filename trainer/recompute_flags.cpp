// The --recompute-* flags (Megatron's arguments.py and TransformerConfig's
// checks, with their wording where it fits): --recompute-activations is
// --recompute-granularity selective; full needs a method and a layer count;
// selective takes neither. A method or a count without full recomputation
// would do nothing, so it is refused rather than ignored. Megatron's older
// names for them are mapped first.
#include <algorithm>
#include <string>

#include "core/error.h"
#include "core/log.h"
#include "trainer/train_config.h"

namespace kiln::trainer {

namespace {
// The old name of the layer count that was given ("" for none):
// --checkpoint-num-layers until c1e0689d92 (2021-08-10), with
// --checkpoint-activations (chunks of that many layers, Megatron's uniform
// method), then --activations-checkpoint-num-layers.
std::string old_layers_flag(const Flags& f) {
  for (const char* name : {"--activations-checkpoint-num-layers", "--checkpoint-num-layers"})
    if (f.given(name)) return name;
  return "";
}
}  // namespace

// Megatron's arguments.py of 2021-2022 (activations_checkpoint_method: set
// alone it turned full checkpointing on; --checkpoint-activations set it to
// uniform) and of 2023 (--checkpoint-activations: granularity full, method
// uniform). The count defaulted to 1 in both. Megatron let
// --checkpoint-activations override a given method silently; kiln refuses a
// conflict instead, and a mix of old and new names, so one meaning is used.
void TrainConfig::map_old_recompute_flags(const Flags& f) {
  const bool old_method = !activations_checkpoint_method.empty();
  const std::string layers_flag = old_layers_flag(f);
  const bool old_layers = !layers_flag.empty();
  if (!checkpoint_activations && !old_method && !old_layers) return;
  if (recompute_activations || !recompute_granularity.empty() || !recompute_method.empty() ||
      f.given("--recompute-num-layers"))
    throw Error(
        "--checkpoint-activations and --activations-checkpoint-* are Megatron's old names for --recompute-*; give "
        "the old flags or the new ones, not both");
  if (old_method && activations_checkpoint_method != "uniform" && activations_checkpoint_method != "block")
    throw Error("--activations-checkpoint-method " + activations_checkpoint_method + " is not one of uniform, block");
  if (checkpoint_activations && old_method && activations_checkpoint_method != "uniform")
    throw Error("--checkpoint-activations means --activations-checkpoint-method uniform, not " +
                activations_checkpoint_method + "; drop one of them");
  if (!checkpoint_activations && !old_method)
    throw Error(layers_flag +
                " applies with --activations-checkpoint-method or --checkpoint-activations; add one or drop it");
  recompute_granularity = "full";
  recompute_method = old_method ? activations_checkpoint_method : "uniform";
  recompute_num_layers = activations_checkpoint_num_layers;
  logger().info("{}: recomputing as --recompute-granularity full --recompute-method {} --recompute-num-layers {}",
                checkpoint_activations ? "--checkpoint-activations" : "--activations-checkpoint-method",
                recompute_method, recompute_num_layers);
}

void TrainConfig::register_recompute_flags(Flags& f) {
  f.add("--recompute-activations", &recompute_activations,
        "recompute each layer's attention core in backward (--recompute-granularity selective)");
  f.add("--recompute-granularity", &recompute_granularity,
        "selective (the attention core) | full (whole layers; needs --recompute-method and --recompute-num-layers)");
  f.add("--recompute-method", &recompute_method,
        "uniform (groups of --recompute-num-layers layers) | block (the first N layers of each pipeline stage)");
  f.add("--recompute-num-layers", &recompute_num_layers, "layers per recomputed group (uniform) or recomputed (block)",
        Bounds::at_least(0));
  f.add("--checkpoint-activations", &checkpoint_activations,
        "Megatron's old name (2021-2023) for --recompute-granularity full --recompute-method uniform");
  f.add("--activations-checkpoint-method", &activations_checkpoint_method,
        "Megatron's old name (2021-2022) for --recompute-method; given alone it means --recompute-granularity full");
  f.add("--activations-checkpoint-num-layers", &activations_checkpoint_num_layers,
        "Megatron's old name (2021-2022) for --recompute-num-layers (default 1)", Bounds::at_least(0));
  f.add_alias("--checkpoint-num-layers", "--activations-checkpoint-num-layers",
              "Megatron's name (2019-2021, until c1e0689d92) for --activations-checkpoint-num-layers: layers per "
              "recomputed chunk with --checkpoint-activations");
}

void TrainConfig::finalize_recompute(const Flags& f) {
  map_old_recompute_flags(f);
  std::string granularity = recompute_granularity;
  if (recompute_activations) {
    if (!granularity.empty() && granularity != "selective")
      throw Error("--recompute-activations means --recompute-granularity selective, not " + granularity +
                  "; drop one of them");
    granularity = "selective";
  }
  const bool method_given = !recompute_method.empty();
  const bool layers_given = f.given("--recompute-num-layers");
  if (granularity.empty()) {
    if (method_given || layers_given)
      throw Error(
          "--recompute-method and --recompute-num-layers apply with --recompute-granularity full; add it or drop "
          "them");
    return;
  }
  if (granularity == "selective") {
    if (method_given)
      throw Error(
          "recompute method is not yet supported for selective recomputing granularity; drop --recompute-method");
    if (layers_given)
      throw Error(
          "When using recompute_granularity: selective recompute_num_layers must be None; drop --recompute-num-layers");
    model.recompute_granularity = RecomputeGranularity::Selective;
    return;
  }
  if (granularity != "full") throw Error("--recompute-granularity " + granularity + " is not one of selective, full");
  if (recompute_method != "uniform" && recompute_method != "block")
    throw Error(
        "Using recompute_granularity: full so recompute_method must be \"block\" or \"uniform\" "
        "(--recompute-method)");
  // Megatron's bound: the layers of one pipeline stage (the smallest, with an uneven split).
  int64_t stage_layers_min = model.num_layers;
  for (int64_t s = 0; s < pipeline_model_parallel_size; ++s)
    stage_layers_min = std::min(stage_layers_min, stage_layers(s));
  if (recompute_num_layers < 1 || recompute_num_layers > stage_layers_min)
    throw Error(
        "When using recompute_granularity: full recompute_num_layers must be between 1 and "
        "num_layers_per_pipeline_rank: " +
        std::to_string(stage_layers_min) + " (" +
        (old_layers_flag(f).empty() ? std::string("--recompute-num-layers") : old_layers_flag(f)) + ")");
  model.recompute_granularity = RecomputeGranularity::Full;
  model.recompute_method = recompute_method == "uniform" ? RecomputeMethod::Uniform : RecomputeMethod::Block;
  model.recompute_num_layers = recompute_num_layers;
}

}  // namespace kiln::trainer
