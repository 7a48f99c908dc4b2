#include "trainer/dist/comm.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "core/error.h"
#include "trainer/dist/comm_mpi.h"

namespace kiln::trainer::dist {

namespace {

class SingleProcessComm : public Comm {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  void start_sum(std::span<float>) override {}
  void start_sum(std::span<double>) override {}
  void start_max(std::span<float>) override {}
  void start_barrier() override {}
  void start_reduce_scatter(std::span<const float> all, std::span<float> mine) override {
    std::copy(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(mine.size()), mine.begin());
  }
  void start_all_gather(std::span<const float> mine, std::span<float> all) override {
    std::copy(mine.begin(), mine.end(), all.begin());
  }
  void start_sum_bf16(std::span<uint16_t>) override {}
  void start_reduce_scatter_bf16(std::span<const uint16_t> all, std::span<uint16_t> mine) override {
    std::copy(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(mine.size()), mine.begin());
  }
  void start_send(std::span<const float>, int, int) override { abort("internal: a send in a single-process job"); }
  void start_recv(std::span<float>, int, int) override { abort("internal: a receive in a single-process job"); }
  std::unique_ptr<Comm> split(int, int) override { return std::make_unique<SingleProcessComm>(); }
  void wait(const std::string&) override {}
  uint64_t started() const override { return 0; }
  void wait_through(uint64_t, const std::string&) override {}
  std::vector<uint64_t> all_gather(uint64_t value, const std::string&) override { return {value}; }
  [[noreturn]] void abort(const std::string& message) override {
    std::fprintf(stderr, "kiln: error: %s\n", message.c_str());
    std::fflush(stderr);
    std::_Exit(1);
  }
  void set_timeout_seconds(double) override {}
};

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

}  // namespace

std::unique_ptr<Comm> make_single_process_comm() { return std::make_unique<SingleProcessComm>(); }

bool World::launched_by_mpi() {
  // OpenMPI's mpirun sets OMPI_COMM_WORLD_SIZE; srun --mpi=pmix and other
  // PMIx launchers set PMIX_RANK; PMI-1/2 launchers set PMI_SIZE.
  return env("OMPI_COMM_WORLD_SIZE") || env("PMIX_RANK") || env("PMI_SIZE");
}

World::World() {
  if (!launched_by_mpi()) {
    comm_ = make_single_process_comm();
    return;
  }
  if (!mpi_available()) {
    const char* size = env("OMPI_COMM_WORLD_SIZE") ? env("OMPI_COMM_WORLD_SIZE") : env("PMI_SIZE");
    if (!size || std::string(size) != "1")
      throw Error(
          "this process was started by an MPI launcher, but this kiln was built without MPI; install "
          "libopenmpi-dev (scripts/install-deps.sh) and rebuild, or run kiln train without mpirun/srun");
    comm_ = make_single_process_comm();
    return;
  }
  comm_ = init_mpi_comm();
}

World::~World() {
  if (comm_ && mpi_available() && launched_by_mpi()) finalize_mpi_comm(std::move(comm_));
}

}  // namespace kiln::trainer::dist
