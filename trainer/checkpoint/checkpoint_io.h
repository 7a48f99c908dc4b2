// Checkpoints in Megatron-LM's directory layout:
//   <save>/latest_checkpointed_iteration.txt   just the iteration number
//   <save>/iter_0000100/model.safetensors      full (unsharded) model tensors
//   <save>/iter_0000100/optimizer.safetensors  "<param>.exp_avg", "<param>.exp_avg_sq", ...
//                                              (absent when saved with --no-save-optim)
//   <save>/iter_0000100/meta.json              the caller's state: config, schedule,
//                                              RNG, data position, consumed samples
// A save is atomic: readers see either the previous checkpoint or the whole
// new one, even if the process dies mid-save.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "trainer/checkpoint/model_config.h"
#include "trainer/checkpoint/safetensors.h"

namespace kiln::trainer {

inline constexpr const char* kLatestFileName = "latest_checkpointed_iteration.txt";
inline constexpr const char* kModelFileName = "model.safetensors";
inline constexpr const char* kOptimizerFileName = "optimizer.safetensors";
inline constexpr const char* kMetaFileName = "meta.json";

// "iter_0000100": Megatron's 7-digit zero-padded name (more digits past 10^7).
std::string checkpoint_dir_name(int64_t iteration);

// Writes a temp dir (<save>/.tmp_iter_N.<pid>) beside the final one, fsyncs every file and the dir,
// renames it into place (replacing an existing checkpoint of the same
// iteration only once the new one is in place), then updates the latest
// file the same way. Throws kiln::Error naming --save on failure, leaving
// any previous checkpoint untouched.
void save_checkpoint(const std::string& save_dir, int64_t iteration, const std::map<std::string, SafeTensor>& model,
                     const std::map<std::string, SafeTensor>& optimizer, const nlohmann::json& meta);

// Makes sure checkpoints can be written to save_dir before any training:
// creates it (and its parents) and writes and removes a probe file. Throws a
// one-line kiln::Error naming --save otherwise (a file, read-only, no space).
void check_save_dir(const std::string& save_dir);

struct LoadedCheckpoint {
  int64_t iteration = 0;
  std::map<std::string, SafeTensor> model;
  std::map<std::string, SafeTensor> optimizer;  // empty when the checkpoint has none
  nlohmann::json meta;
  std::string dir;  // the iteration directory actually read
};

// What a caller needs of a checkpoint: meta.json only (checks made before
// the run loads it), the model (generate, export: they never read the
// optimizer, so a checkpoint without optimizer.safetensors serves them),
// or everything a resumed run restores.
enum class CheckpointParts { Meta, Model, ModelAndOptimizer };

// load_path is either a --save root (the iteration comes from its latest
// file) or one iteration directory (the iteration comes from its iter_N
// name, or, for a renamed copy, from an integer "iteration" in meta.json).
// Every failure is a one-line kiln::Error naming the path and the fix,
// among them model parameters that are NaN or infinite (nothing can be
// trained or sampled from them) and tensors of a dtype kiln does not save.
LoadedCheckpoint load_checkpoint(const std::string& load_path,
                                 CheckpointParts parts = CheckpointParts::ModelAndOptimizer);

// The model architecture in ck's meta.json; a missing or bad "config" is
// a kiln::Error naming that meta.json, the key and what it expected.
ModelArchitecture checkpoint_architecture(const LoadedCheckpoint& ck);

// True when load_path is a first launch's --load (Megatron's "could not find
// the metadata file"): it does not exist, or is a directory with no latest
// file, no checkpoint files and no iter_XXXXXXX directories. Anything else
// (a file, a partial or corrupt checkpoint) is for load_checkpoint to judge.
bool holds_no_checkpoint(const std::string& load_path);

}  // namespace kiln::trainer
