// Fuzz target: a checkpoint's meta.json and latest_checkpointed_iteration.txt
// (trainer/checkpoint/checkpoint_io.h load_checkpoint) and what `kiln train --load`
// reads from the metadata (trainer/checkpoint/model_config.h model_config_from_json, the
// resume counters).
//
// Input: the bytes of meta.json. A checkpoint directory with valid (tiny)
// model and optimizer files is set up once; each input becomes its
// meta.json, and also the latest-iteration file of a --save root, and both
// are loaded. Everything must end in a kiln::Error with a message (or
// success), never a crash or undefined behaviour.
#include <nlohmann/json.hpp>
#include <string>

#include "core/error.h"
#include "fuzz_util.h"
#include "trainer/checkpoint/checkpoint_io.h"
#include "trainer/checkpoint/model_config.h"

namespace {
namespace fs = std::filesystem;
fs::path g_renamed;  // a copied iteration dir: the iteration comes from meta.json
fs::path g_root;     // a --save root: the iteration comes from the latest file

void write_tensors(const fs::path& dir) {
  using kiln::trainer::SafeTensor;
  kiln::trainer::write_safetensors((dir / kiln::trainer::kModelFileName).string(),
                                   {{"embedding.weight", SafeTensor::from_f32({2, 2}, {1, 2, 3, 4})}},
                                   {{"format", "pt"}});
  kiln::trainer::write_safetensors((dir / kiln::trainer::kOptimizerFileName).string(),
                                   {{"exp_avg.embedding.weight", SafeTensor::from_f32({2, 2}, {0, 0, 0, 0})}},
                                   {{"format", "pt"}});
}

// What trainer.cpp's resume path reads from the metadata.
void use_meta(const nlohmann::json& meta) {
  try {
    kiln::trainer::model_config_from_json(meta.contains("config") ? meta["config"] : nlohmann::json());
  } catch (const kiln::Error&) {
  }
  for (const char* key : {"consumed_samples", "skipped_iterations", "nan_iterations"}) {
    try {
      (void)kiln::trainer::meta_integer(meta, key, 0);
    } catch (const kiln::Error&) {
    }
  }
}

void load(const fs::path& path) {
  try {
    kiln::trainer::LoadedCheckpoint ck = kiln::trainer::load_checkpoint(path.string());
    KILN_FUZZ_CHECK(ck.meta.is_object(), "loaded metadata that is not an object");
    KILN_FUZZ_CHECK(ck.iteration >= 0, "loaded a negative iteration " + std::to_string(ck.iteration));
    use_meta(ck.meta);
  } catch (const kiln::Error& e) {
    KILN_FUZZ_CHECK(std::string(e.what()).find('\n') == std::string::npos,
                    "multi-line error: " + std::string(e.what()));
  }
}
}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  g_renamed = kiln::fuzz::scratch_dir() / "my-checkpoint";
  g_root = kiln::fuzz::scratch_dir() / "save";
  fs::create_directories(g_renamed);
  fs::create_directories(g_root / "iter_0000007");
  write_tensors(g_renamed);
  write_tensors(g_root / "iter_0000007");
  kiln::fuzz::write_file(g_root / "iter_0000007" / kiln::trainer::kMetaFileName, "{\"iteration\": 7}");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kiln::fuzz::write_file(g_renamed / kiln::trainer::kMetaFileName, data, size);
  load(g_renamed);
  kiln::fuzz::write_file(g_root / kiln::trainer::kLatestFileName, data, size);
  load(g_root);
  return 0;
}
