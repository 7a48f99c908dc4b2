// The MPI implementation of Comm (comm_mpi.cpp), or its absence
// (comm_nompi.cpp) when the build found no MPI.
#pragma once

#include <memory>

#include "trainer/dist/comm.h"

namespace kiln::trainer::dist {

bool mpi_available();
// MPI_Init_thread(FUNNELED) and the world communicator.
std::unique_ptr<Comm> init_mpi_comm();
// Waits for every rank (with the deadline), then MPI_Finalize.
void finalize_mpi_comm(std::unique_ptr<Comm> comm);

}  // namespace kiln::trainer::dist
