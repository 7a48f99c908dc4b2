// Built instead of comm_mpi.cpp when CMake finds no MPI: multi-rank launches
// fail with a clear error in World (comm.cpp).
#include <cstdlib>

#include "trainer/dist/comm_mpi.h"

namespace kiln::trainer::dist {

bool mpi_available() { return false; }
std::unique_ptr<Comm> init_mpi_comm() { std::abort(); }
void finalize_mpi_comm(std::unique_ptr<Comm>) {}

}  // namespace kiln::trainer::dist
