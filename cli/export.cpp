// kiln export: a kiln checkpoint as a Hugging Face GPT2LMHeadModel or
// LlamaForCausalLM directory (docs/CHECKPOINTS.md has the tensor mappings).
#include <algorithm>
#include <cctype>

#include "cli/commands.h"
#include "core/error.h"
#include "trainer/checkpoint/checkpoint_io.h"
#include "trainer/checkpoint/dtype_convert.h"
#include "trainer/checkpoint/hf_architecture.h"
#include "trainer/checkpoint/hf_dir.h"
#include "trainer/checkpoint/hf_tokenizer_files.h"
#include "trainer/checkpoint/model_config.h"
#include "trainer/data/stop_signals.h"
#include "trainer/flags.h"
#include "trainer/trainer.h"

namespace kiln::cli {

int run_export(const std::vector<std::string>& args) {
  std::string load, format, output, dtype = "f32", max_shard_size = "5GB";
  bool skip_tokenizer = false;
  trainer::Flags flags("export");
  flags.add("--load", &load, "checkpoint to export (a --save dir or an iter_XXXXXXX dir)");
  flags.add("--format", &format, "output format: hf (Hugging Face GPT2LMHeadModel or LlamaForCausalLM)");
  flags.add("--output", &output, "directory to create");
  flags.add("--dtype", &dtype, "tensor dtype: f32, f16 or bf16 (round to nearest even)");
  flags.add("--max-shard-size", &max_shard_size, "split the weights into shards above this size (e.g. 5GB, 64MiB)");
  flags.add("--skip-tokenizer", &skip_tokenizer, "write no tokenizer files, even when the checkpoint records them");
  if (!flags.parse(args)) return 0;
  if (format != "hf") throw Error("--format '" + format + "' is not supported; kiln export writes --format hf");
  if (load.empty()) throw Error("kiln export needs --load CKPT (a checkpoint written by kiln train --save)");
  if (output.empty()) throw Error("kiln export needs --output DIR (the directory to create)");
  std::string st_dtype = dtype;
  std::transform(st_dtype.begin(), st_dtype.end(), st_dtype.begin(), [](unsigned char ch) { return std::toupper(ch); });
  if (st_dtype != "F32" && st_dtype != "F16" && st_dtype != "BF16")
    throw Error("--dtype '" + dtype + "' is not supported; use f32, f16 or bf16");
  const int64_t shard_bytes = trainer::parse_shard_size(max_shard_size);
  // SIGTERM and Ctrl-C stop the export between files, and its temporary is
  // removed (N38; it was left full-size beside --output).
  const data::StopSignals stop_signals;

  // The model only: an HF directory holds no optimizer state.
  trainer::LoadedCheckpoint ck = trainer::load_checkpoint(load, trainer::CheckpointParts::Model);
  const trainer::GptConfig cfg(trainer::checkpoint_architecture(ck));
  trainer::HfModel model = trainer::kiln_to_hf(cfg, ck.model);
  trainer::HfDir hf;
  hf.config = model.config;
  hf.config["torch_dtype"] = st_dtype == "F32" ? "float32" : st_dtype == "F16" ? "float16" : "bfloat16";
  hf.generation_config = {{"_from_model_config", true}};
  for (auto& [name, t] : model.tensors) hf.tensors[name] = trainer::convert_f32_tensor(t, st_dtype);
  if (!skip_tokenizer) hf.files = trainer::hf_tokenizer_files(ck.meta, ck.dir, cfg.seq_length);
  trainer::write_hf_dir(output, hf, shard_bytes);
  std::printf("exported %s (iteration %lld) to %s as %s, %s\n", ck.dir.c_str(), static_cast<long long>(ck.iteration),
              output.c_str(), model.architecture.c_str(), dtype.c_str());
  return 0;
}

}  // namespace kiln::cli
