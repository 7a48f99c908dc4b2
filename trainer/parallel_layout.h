// Where a rank sits in Megatron's data x tensor x pipeline layout, from its
// world rank alone. A training rank places itself with it; `kiln precompile
// --world-size N` places every rank of a job it never launches. One function
// for both is what makes precompile build the graphs each rank will build.
#pragma once

#include <cstdint>
#include <string>

#include "trainer/train_config.h"

namespace kiln::trainer {

// World rank = (pp_rank x dp + dp_rank) x tp + tp_rank (Megatron's order: a
// tensor-parallel group is consecutive ranks, then data, then pipeline).
struct Layout {
  int64_t dp = 1, dp_rank = 0, tp = 1, tp_rank = 0, pp = 1, pp_rank = 0;
  bool first_stage() const { return pp_rank == 0; }
  bool last_stage() const { return pp_rank == pp - 1; }
};

// Rank `rank` of `world_size` ranks with `tp` tensor-parallel ranks and `pp`
// pipeline stages (world_size a multiple of tp x pp).
Layout rank_layout(int64_t rank, int64_t world_size, int64_t tp, int64_t pp);

// Checks that `world_size` ranks hold whole tensor x pipeline groups and sets
// cfg.data_parallel_size from them; call before cfg.finalize. `launch` says
// how the user sets the world size, for the fix in the error ("mpirun -np N").
void set_world_size(TrainConfig& cfg, int64_t world_size, const std::string& launch);

}  // namespace kiln::trainer
