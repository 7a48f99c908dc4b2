// Why a run saves or stops out of schedule, agreed by every rank.
//
// Requests arrive on single ranks: a SIGTERM/SIGUSR2 (Slurm signals every
// task, mpirun forwards SIGUSR2 to every rank), --exit-duration-in-mins on
// a rank's own clock, and trigger files that rank 0 checks every
// --log-interval steps. Each rank writes its requests into a few numbers
// that ride on the step's loss all-reduce; the sums are the same on every
// rank, so every rank takes the same decision at the same iteration
// boundary without an extra collective.
#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <string>

#include "trainer/train_config.h"

namespace kiln::trainer {

class JobControl {
 public:
  static constexpr size_t kSlots = 4;

  // Installs the SIGTERM and SIGUSR2 handlers (restored by the destructor).
  JobControl(const TrainConfig& cfg, int rank);
  ~JobControl();
  JobControl(const JobControl&) = delete;
  JobControl& operator=(const JobControl&) = delete;

  // This rank's requests for the end of step `iteration` (1-based).
  void local_requests(int64_t iteration, std::span<double, kSlots> slots) const;

  struct Decision {
    bool save = false;  // save a checkpoint now
    bool exit = false;  // then exit with status 0
    std::string reason;
  };
  // From the slots summed over ranks; rank 0 removes a trigger file it acted on.
  Decision decide(std::span<const double, kSlots> summed) const;

 private:
  std::string save_trigger_, exit_trigger_;
  int64_t log_interval_;
  double exit_minutes_;
  int rank_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace kiln::trainer
