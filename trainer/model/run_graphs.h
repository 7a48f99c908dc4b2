// The graphs one training run executes, from its config alone. `kiln train`
// compiles exactly these and `kiln precompile` extracts exactly these, so
// the two can never disagree about what a run needs.
// A rank's graphs depend on the config (the data-parallel size included:
// --use-distributed-optimizer shards the optimizer graph by it) and on the
// rank's pipeline stage; precompile learns both from --world-size.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "graph/graph.h"
#include "trainer/parallel_layout.h"
#include "trainer/train_config.h"

namespace kiln::trainer {

struct RunGraphs {
  graph::Graph first_micro_batch;                // forward+backward, gradients overwritten
  std::optional<graph::Graph> next_micro_batch;  // gradients accumulated (2+ micro-batches)
  graph::Graph grad_norm;
  graph::Graph optimizer;
  std::optional<graph::Graph> eval;  // --eval-iters > 0
  // A pipeline stage before the last: the forward it runs per micro-batch
  // before its train step (trainer/model/step_graphs.h).
  std::optional<graph::Graph> stage_forward;
  // The interleaved schedule: the graphs of this rank's model chunks 1 to
  // vp - 1 (these are chunk 0's), each over its own layers.
  std::vector<RunGraphs> later_chunks;

  // Every graph with a name for logs, in build order (a later chunk's
  // names prefixed "chunk c: ").
  std::vector<std::pair<std::string, const graph::Graph*>> list() const;
};

RunGraphs build_run_graphs(const TrainConfig& cfg);
// The graphs of one pipeline stage (TrainConfig::stage_model).
RunGraphs build_run_graphs(const TrainConfig& cfg, const GptConfig& stage);
// The graphs the rank at `at` builds: its pipeline stage's (every model
// chunk's under the interleaved schedule). Of a rank's
// coordinates only pp_rank matters, so the ranks of one stage share them
// (precompile builds them once per stage). `fused_attention`: the attention
// core as ATTENTION nodes, as choose_attention() (trainer/attention_backend.h)
// decides for the backend.
RunGraphs build_rank_graphs(const TrainConfig& cfg, const Layout& at, bool fused_attention = false);

// The startup log lines saying how many compiled graphs came from the
// compile cache, how many compiled, and how long each took; then how many
// seconds setup spent compiling (0.0 after `kiln precompile`).
void log_compile_cache_use();

}  // namespace kiln::trainer
