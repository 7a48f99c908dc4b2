// What a run tells the world, on the last rank as Megatron: the iteration
// line every --log-interval, validation lines, the exit line, and the same
// numbers to TensorBoard (--tensorboard-dir) and JSONL (--metrics-file).
#pragma once

#include <chrono>
#include <fstream>
#include <memory>

#include "trainer/report/append_file.h"
#include "trainer/report/megatron_log.h"
#include "trainer/report/tensorboard.h"
#include "trainer/setup.h"
#include "trainer/step.h"

namespace kiln::trainer {

class Reporter {
 public:
  // Opens the metrics file and TensorBoard writer; throws kiln::Error when
  // the metrics file cannot be opened.
  explicit Reporter(const Setup& run);
  // Counts a step; prints its interval's line when one is due.
  void log(const StepResult& step);
  void log_validation(int64_t iteration, double loss);
  // `saved`: a checkpoint was written at this iteration (an exit trigger of
  // --trigger-path stops without one).
  void log_exit(int64_t iteration, const JobControl::Decision& request, bool saved);
  // Time spent since the last step (evaluating, saving) is not iteration
  // time.
  void restart_clock() { interval_start_ = std::chrono::steady_clock::now(); }

 private:
  const Setup& run_;
  const bool prints_;  // Megatron prints (and so records) on the last rank only
  std::unique_ptr<AppendFile> metrics_;
  std::unique_ptr<TensorBoardWriter> tensorboard_;
  IntervalStats stats_;
  std::chrono::steady_clock::time_point interval_start_ = std::chrono::steady_clock::now();
};

}  // namespace kiln::trainer
