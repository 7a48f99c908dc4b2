#include "trainer/parallel_layout.h"

#include "core/error.h"

namespace kiln::trainer {

ParallelState job_parallel_state(int64_t world_size, int64_t tp, int64_t pp) {
  const int64_t dp = tp > 0 && pp > 0 ? world_size / (tp * pp) : 0;
  return ParallelState::megatron(world_size, tp, /*cp=*/1, /*ep=*/1, dp, pp);
}

Layout rank_layout(const ParallelState& state, int64_t rank) {
  Layout at;
  at.tp = state.size("tp");
  at.dp = state.size("dp");
  at.pp = state.size("pp");
  at.tp_rank = state.coordinate(rank, "tp");
  at.dp_rank = state.coordinate(rank, "dp");
  at.pp_rank = state.coordinate(rank, "pp");
  return at;
}

void set_world_size(TrainConfig& cfg, int64_t world_size, const std::string& launch) {
  const int64_t tp = cfg.tensor_model_parallel_size, pp = cfg.pipeline_model_parallel_size;
  std::string fix = " ranks of this job; launch a multiple of it (";
  fix += launch;
  fix += ")";
  if (tp <= 0) throw Error("--tensor-model-parallel-size must be positive, got " + std::to_string(tp));
  if (pp <= 0) throw Error("--pipeline-model-parallel-size must be positive, got " + std::to_string(pp));
  // Megatron's layout: world = data-parallel x tensor-parallel ranks.
  if (world_size % tp != 0)
    throw Error("--tensor-model-parallel-size " + std::to_string(tp) + " does not divide the " +
                std::to_string(world_size) + fix);
  // Pipeline stages multiply the model-parallel ranks (Megatron's order:
  // tensor-parallel ranks adjacent, then data-parallel, then pipeline).
  if (world_size % (tp * pp) != 0)
    throw Error("--pipeline-model-parallel-size " + std::to_string(pp) + " x --tensor-model-parallel-size " +
                std::to_string(tp) + " does not divide the " + std::to_string(world_size) + fix);
  cfg.data_parallel_size = world_size / (tp * pp);
}

}  // namespace kiln::trainer
