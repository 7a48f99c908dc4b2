// Megatron's --check-weight-hash-across-dp-replicas-interval, and the same
// check at start-up: data-parallel replicas must hold bitwise the same
// parameters.
#pragma once

#include <cstdint>

#include "trainer/dist/comm.h"
#include "trainer/model/model_state.h"

namespace kiln::trainer::dist {

// Megatron's --check-weight-hash-across-dp-replicas-interval: a hash of
// every parameter's bytes, compared across ranks; throws kiln::Error naming
// the ranks that differ. at_start: the check every data-parallel job makes
// once the weights are initialised or loaded (as PyTorch DDP's broadcast
// makes them equal), silent when they agree.
void check_parameters_identical(Comm& comm, const ModelState& state, int64_t iteration, bool at_start = false);

}  // namespace kiln::trainer::dist
