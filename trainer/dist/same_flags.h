// All ranks of a job must be told the same thing. Ranks launched with
// different flags (a --seed that differs, another --lr) used to diverge
// silently and exit 0, or fail deep inside MPI with MPI_ERR_TRUNCATE. At
// start-up every rank compares a hash of its flags with the others'; on a
// mismatch they compare flag by flag and each rank names the flags that
// differ, in one line.
#pragma once

#include "trainer/dist/comm.h"
#include "trainer/flags.h"

namespace kiln::trainer::dist {

// Throws kiln::Error naming the differing flags (and this rank's values).
// Flags that only say where or how this rank runs (--device, --num-threads,
// file paths of per-rank outputs) may differ.
void check_same_flags(Comm& comm, const Flags& flags);

}  // namespace kiln::trainer::dist
