// kiln import: a Hugging Face GPT2LMHeadModel or LlamaForCausalLM directory
// as an iteration-0 kiln checkpoint (model tensors and the model config in
// meta.json, no optimizer or RNG state), which kiln train --load CKPT
// --finetune starts from.
#include <cstdio>
#include <filesystem>

#include "cli/commands.h"
#include "core/error.h"
#include "trainer/checkpoint/checkpoint_io.h"
#include "trainer/checkpoint/hf_architecture.h"
#include "trainer/checkpoint/hf_dir.h"
#include "trainer/checkpoint/model_config.h"
#include "trainer/checkpoint/save_lock.h"
#include "trainer/data/stop_signals.h"
#include "trainer/flags.h"
#include "trainer/trainer.h"

namespace kiln::cli {

int run_import(const std::vector<std::string>& args) {
  std::string format, input, save;
  trainer::Flags flags("import");
  flags.add("--format", &format, "input format: hf (Hugging Face GPT2LMHeadModel or LlamaForCausalLM)");
  flags.add("--input", &input, "Hugging Face model directory (config.json + safetensors)");
  flags.add("--save", &save, "checkpoint directory to write (as kiln train --save)");
  if (!flags.parse(args)) return 0;
  if (format != "hf") throw Error("--format '" + format + "' is not supported; kiln import reads --format hf");
  if (input.empty()) throw Error("kiln import needs --input DIR (a Hugging Face model directory)");
  if (save.empty()) throw Error("kiln import needs --save CKPT (the checkpoint directory to write)");

  // An import is iteration 0: into a --save dir that has checkpoints it would
  // point latest_checkpointed_iteration.txt back at the import.
  std::error_code ec;
  if (std::filesystem::exists(std::filesystem::path(save) / trainer::kLatestFileName, ec))
    throw Error("--save " + save + " already holds checkpoints; import into a new directory");

  // SIGTERM and Ctrl-C stop the import between the checkpoint's files, and
  // its temporary is removed (N38; it was left full-size in --save).
  const data::StopSignals stop_signals;
  // Only the tensors config.json's model needs are read, each shard's
  // header checked against their shapes first (N105).
  const trainer::HfDir hf = trainer::read_hf_dir(input, trainer::hf_tensors_needed);
  const trainer::KilnModel imported = trainer::hf_to_kiln(hf.config, hf.tensors);
  const trainer::GptConfig& cfg = imported.config;
  const std::map<std::string, trainer::SafeTensor>& model = imported.tensors;
  if (const std::string bad = trainer::first_non_finite(model); !bad.empty())
    throw Error("--input " + input + " holds NaN or infinite weights (in kiln's " + bad +
                "); kiln import writes no checkpoint of them, as kiln train saves none");
  // A model only, as Megatron's converted checkpoints: no optimizer or RNG
  // state, so kiln train continues from it with --finetune (docs/CHECKPOINTS.md).
  const nlohmann::json meta = {{"config", trainer::model_config_json(cfg)},
                               {"iteration", 0},
                               {"consumed_samples", 0},
                               {"skipped_iterations", 0},
                               {"nan_iterations", 0},
                               {"optimizer", {{"state_saved", false}}},
                               {"rng", nullptr},
                               {"imported_from", {{"format", "hf"}, {"dir", input}}}};
  trainer::check_save_dir(save);
  // As kiln train: one writer per --save, and taking the lock removes what
  // an import or save killed with kill -9 left there (N38).
  const auto save_lock = trainer::SaveDirLock::take(save);
  trainer::save_checkpoint(save, 0, model, {}, meta);
  std::printf("imported %s into %s (iteration 0); continue with kiln train --load %s --finetune\n", input.c_str(),
              save.c_str(), save.c_str());
  return 0;
}

}  // namespace kiln::cli
