// The unit-invariance audit (docs/CACHE.md): for the configurations kiln's
// users train, the number of unique compile units a rank compiles is the
// same at 4 layers as at 8, so precompile's cost does not grow with depth.
// A unit is unique per cache key, and identical layers share a key only if
// nothing in a layer's graph differs between layers: anything per layer (a
// dropout site, a layer-number scale) must reach the unit as an input. A
// new option that bakes a per-layer number into a layer's graph fails here
// instead of silently costing a compile per layer.
//
// Each configuration is a kiln train command line, parsed and finalized as
// `kiln train` does, and each rank's graphs are those `kiln precompile`
// extracts (trainer::build_rank_graphs), counted per pipeline stage.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "compiler_cache/compile_cache.h"
#include "core/fallback_device.h"
#include "core/registry.h"
#include "graph/executor.h"
#include "trainer/model/run_graphs.h"
#include "trainer/parallel/parallel_state.h"
#include "trainer/parallel_layout.h"
#include "trainer/train_config.h"

namespace kiln::trainer {
namespace {

struct Configuration {
  const char* name;
  std::vector<std::string> flags;
  int64_t world_size = 1;
  bool fused_attention = false;  // as choose_attention() sets it for a backend with the kernels
};

// A small model with Megatron's default dropout (0.1 on hidden states and
// attention probabilities), the configuration's flags after it.
TrainConfig parsed(const Configuration& c, int64_t layers) {
  std::vector<std::string> args = {"--num-layers",          std::to_string(layers),
                                   "--hidden-size",         "32",
                                   "--num-attention-heads", "4",
                                   "--seq-length",          "16",
                                   "--micro-batch-size",    "2",
                                   "--global-batch-size",   std::to_string(4 * c.world_size)};
  args.insert(args.end(), c.flags.begin(), c.flags.end());
  TrainConfig cfg;
  Flags flags{"train"};
  cfg.register_flags(flags);
  flags.parse(args);
  cfg.finalize(flags);
  return cfg;
}

// Unique cache keys of every graph of one rank per pipeline stage.
std::map<int64_t, size_t> unique_units_per_stage(const Configuration& c, int64_t layers) {
  const TrainConfig cfg = parsed(c, layers);
  std::unique_ptr<Device> cpu = Registry::instance().open("cpu", 0, 1);
  FallbackDevice fallback;
  const ParallelState parallel =
      job_parallel_state(c.world_size, cfg.model.tensor_parallel, cfg.pipeline_model_parallel_size);
  std::map<int64_t, size_t> units;
  std::set<int64_t> stages_done;
  for (int64_t rank = 0; rank < c.world_size; ++rank) {
    const Layout at = rank_layout(parallel, rank);
    if (!stages_done.insert(at.pp_rank).second) continue;
    compiler_cache::Extraction extraction;
    const RunGraphs graphs = build_rank_graphs(cfg, at, c.fused_attention);
    for (const auto& [name, g] : graphs.list()) graph::Executable exe(*cpu, *g, &fallback, &extraction);
    std::set<std::string> keys;
    for (const auto& task : extraction.tasks()) keys.insert(task.key);
    units[at.pp_rank] = keys.size();
  }
  return units;
}

const std::vector<Configuration>& configurations() {
  static const std::vector<Configuration> all = {
      {"GPT-3 style: dropout 0.1, fp16", {"--fp16"}},
      {"Llama-3 style: bf16, GQA, RoPE with scaling, SwiGLU, RMSNorm, untied",
       {"--bf16", "--group-query-attention", "--num-query-groups", "2", "--position-embedding-type", "rope",
        "--use-rope-scaling", "--swiglu", "--normalization", "RMSNorm", "--untie-embeddings-and-output-weights"}},
      {"MPT style: ALiBi, clip-qkv, no bias",
       {"--position-embedding-type", "alibi", "--clip-qkv", "8", "--disable-bias-linear"}},
      {"TP=2 with sequence parallelism", {"--tensor-model-parallel-size", "2", "--sequence-parallel"}, 2},
      {"PP=2, 1F1B", {"--pipeline-model-parallel-size", "2"}, 2},
      {"PP=2, interleaved", {"--pipeline-model-parallel-size", "2", "--num-layers-per-virtual-pipeline-stage", "1"}, 2},
      {"the distributed optimizer (DP=2)", {"--use-distributed-optimizer"}, 2},
      {"full recompute",
       {"--recompute-granularity", "full", "--recompute-method", "uniform", "--recompute-num-layers", "1"}},
      {"selective recompute", {"--recompute-granularity", "selective"}},
      {"fused attention with dropout 0.1 (ATTENTION_DROPOUT), TP=2", {"--tensor-model-parallel-size", "2"}, 2, true},
      {"fused attention, bf16, selective recompute", {"--bf16", "--recompute-granularity", "selective"}, 1, true},
      {"FP8 hybrid, delayed scaling (bf16)",
       {"--bf16", "--fp8-format", "hybrid", "--fp8-amax-history-len", "16", "--fp8-amax-compute-algo", "max"}},
      {"FP8 e4m3, tensorwise scaling, TP=2",
       {"--fp8-format", "e4m3", "--fp8-recipe", "tensorwise", "--tensor-model-parallel-size", "2"},
       2},
  };
  return all;
}

TEST(UnitInvariance, UniqueUnitsAtFourLayersEqualThoseAtEight) {
  for (const Configuration& c : configurations()) {
    SCOPED_TRACE(c.name);
    const std::map<int64_t, size_t> four = unique_units_per_stage(c, 4), eight = unique_units_per_stage(c, 8);
    ASSERT_EQ(four.size(), eight.size());
    for (const auto& [stage, n] : four) {
      EXPECT_EQ(eight.at(stage), n) << "pipeline stage " << stage << ": " << n << " unique units at 4 layers, "
                                    << eight.at(stage) << " at 8";
      EXPECT_GT(n, 0u);
    }
  }
}

// The audit can fail: with a per-layer number in each layer's graph (query-
// key layer scaling divides by the layer number, a constant of the layer's
// unit) the count grows with depth. Megatron made that option opt-in; it is
// the one known per-layer unit (docs/CACHE.md).
TEST(UnitInvariance, APerLayerConstantIsCaught) {
  const Configuration scaled{"query-key layer scaling", {"--fp16", "--apply-query-key-layer-scaling"}};
  EXPECT_LT(unique_units_per_stage(scaled, 4).at(0), unique_units_per_stage(scaled, 8).at(0));
}

}  // namespace
}  // namespace kiln::trainer
