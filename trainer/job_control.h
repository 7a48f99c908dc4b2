// Why a run saves or stops out of schedule, agreed by every rank.
//
// Requests arrive on single ranks: a stop signal (kiln's SIGTERM/SIGUSR2,
// plus Megatron's --exit-signal under --exit-signal-handler; Slurm signals
// every task, mpirun forwards SIGUSR1/SIGUSR2 to every rank),
// --exit-duration-in-mins on a rank's own clock, --exit-interval, and trigger
// files that rank 0 checks every --log-interval steps (kiln's and swiss-ai's
// --trigger-path). Each rank writes its requests into a few numbers that ride
// on the step's loss all-reduce; the sums are the same on every rank, so
// every rank takes the same decision at the same iteration boundary without
// an extra collective.
#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "trainer/train_config.h"

namespace kiln::trainer {

class JobControl {
 public:
  static constexpr size_t kSlots = 6;

  // Installs the handlers of cfg.exit.stop_signals() (restored by the destructor).
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
  // From the slots summed over ranks; rank 0 removes a trigger file it acted on
  // (not swiss-ai's exit file, which stays to stop requeued jobs).
  Decision decide(std::span<const double, kSlots> summed) const;

  // Training reached --train-iters: under --trigger-path rank 0 creates
  // DIR/exit, as swiss-ai's Megatron, so a job script cancels its pending
  // requeues.
  void training_finished(int64_t iteration) const;

 private:
  std::string save_trigger_, exit_trigger_, stop_trigger_;
  std::vector<int> signals_;
  int64_t log_interval_, exit_interval_;
  double exit_minutes_;
  int rank_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace kiln::trainer
