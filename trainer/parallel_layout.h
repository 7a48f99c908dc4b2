// Where a rank sits in Megatron's data x tensor x pipeline layout, from its
// world rank alone. A training rank places itself with it; `kiln precompile
// --world-size N` places every rank of a job it never launches. One function
// for both (ParallelState's, trainer/parallel/) is what makes precompile
// build the graphs each rank will build.
#pragma once

#include <cstdint>
#include <string>

#include "trainer/parallel/parallel_state.h"
#include "trainer/train_config.h"

namespace kiln::trainer {

// World rank = (pp_rank x dp + dp_rank) x tp + tp_rank (Megatron's order: a
// tensor-parallel group is consecutive ranks, then data, then pipeline).
struct Layout {
  int64_t dp = 1, dp_rank = 0, tp = 1, tp_rank = 0, pp = 1, pp_rank = 0;
  bool first_stage() const { return pp_rank == 0; }
  bool last_stage() const { return pp_rank == pp - 1; }
};

// The job's dimensions in Megatron's order tp-cp-ep-dp-pp: `tp`
// tensor-parallel ranks, `pp` pipeline stages and the data-parallel ranks
// left of `world_size` (a multiple of tp x pp: set_world_size checks it
// first, in the user's words). kiln has no context or expert parallelism
// yet, so cp and ep are 1.
ParallelState job_parallel_state(int64_t world_size, int64_t tp, int64_t pp);

// Rank `rank`'s coordinates in `state` (a job_parallel_state).
Layout rank_layout(const ParallelState& state, int64_t rank);

// Checks that `world_size` ranks hold whole tensor x pipeline groups and sets
// cfg.data_parallel_size from them; call before cfg.finalize. `launch` says
// how the user sets the world size, for the fix in the error ("mpirun -np N").
void set_world_size(TrainConfig& cfg, int64_t world_size, const std::string& launch);

}  // namespace kiln::trainer
