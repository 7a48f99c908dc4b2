// kiln train --profile (KILN_PROFILE=1): the training loop recorded into a
// graph::RunProfile, its table printed when the loop ends, by every rank
// (each runs its own graphs; the title names the rank in a multi-rank job).
//
// The first iteration is left out of the table when more follow, and its
// time is stated in the title: it carries one-time costs (the first execute
// of each piece: 136 ms against 39 ms for later iterations on PoCL, 8.9 s
// right after a fresh compile) that would swamp a short run's steady state.
//
// The cpu backend's per-op table (KILN_CPU_PROFILE) is turned on with it,
// unless the environment already sets it: the cpu plugin times each node,
// which no generic measurement can, and prints that table when its device
// closes, after this one.
#pragma once

#include <cstdint>
#include <memory>

#include "graph/run_profile.h"
#include "trainer/setup.h"

namespace kiln::trainer {

class RunProfileReport {
 public:
  // Before the devices open: sets KILN_CPU_PROFILE when profiling.
  static void prepare(const TrainConfig& cfg);
  // Starts recording (when profiling) from the loop's first iteration.
  explicit RunProfileReport(const Setup& run);
  // After each iteration: the first one's time is set aside.
  void iteration_done();
  // Prints the table for the iterations counted; once.
  void finish();

 private:
  const Setup& run_;
  int64_t counted_from_;       // the iteration before the first one counted
  double first_seconds_ = -1;  // the first iteration's wall time, once set aside
  std::unique_ptr<graph::RunProfile> profile_;
  std::unique_ptr<graph::RunProfile::Recording> recording_;
};

}  // namespace kiln::trainer
