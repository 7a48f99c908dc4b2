// The graphs one training run executes, from its config alone. `kiln train`
// compiles exactly these and `kiln precompile` extracts exactly these, so
// the two can never disagree about what a run needs.
// (One exception: with --use-distributed-optimizer the optimizer graph
// depends on the data-parallel size, which precompile does not know; it
// builds the unsharded one.)
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "graph/graph.h"
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

  // Every graph with a name for logs, in build order.
  std::vector<std::pair<std::string, const graph::Graph*>> list() const;
};

RunGraphs build_run_graphs(const TrainConfig& cfg);
// The graphs of one pipeline stage (TrainConfig::stage_model).
RunGraphs build_run_graphs(const TrainConfig& cfg, const GptConfig& stage);

// The startup log line saying how many compiled graphs came from the
// compile cache, how many compiled, and how long each took.
void log_compile_cache_use();

}  // namespace kiln::trainer
