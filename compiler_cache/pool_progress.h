// The precompile pool's progress: one aggregated line from the parent,
//   precompile: 3/10 done, 1 failed, 2 running, 0 locked, 12.0 s, ETA 25 s
// On a terminal the line is rewritten in place (\r) once a second; otherwise
// (a CI log, a pipe) a new line is printed when the counts change, at most
// one a second, and at least every 10 s while work runs, so that a log shows
// both progress and that the run is alive without flooding. Other messages
// (a failed unit) go through message() so they never land mid-line.
#pragma once

#include <chrono>
#include <cstdio>
#include <string>

namespace kiln::compiler_cache {

struct ProgressCounts {
  int total = 0;  // unique units
  int done = 0;   // cached or compiled
  int failed = 0;
  int running = 0;        // worker processes now
  int locked = 0;         // waiting for another process's lock
  int compiled_here = 0;  // finished by this run's workers, for the ETA
  int queued_here = 0;    // left to this run's workers (running included)
};

// "ETA 25 s" from the pace of this run's finished workers: elapsed time per
// finished unit times the units left, divided by nothing more (the pace
// already reflects the parallelism). "ETA ?" before the first one finishes.
std::string progress_line(const ProgressCounts& c, double elapsed_s);

class PoolProgress {
 public:
  using Clock = std::chrono::steady_clock;
  // `out`'s terminal-ness picks the form.
  explicit PoolProgress(std::FILE* out);
  PoolProgress(std::FILE* out, bool terminal);
  // Called from the pool's loop as often as it likes; prints when due.
  void update(const ProgressCounts& c, Clock::time_point now);
  // A line of its own (a failure), never inside the rewritten line.
  void message(const std::string& line);
  // The last state, always printed, ending the rewritten line.
  void finish(const ProgressCounts& c, Clock::time_point now);

 private:
  void print(const std::string& line);
  std::FILE* out_;
  bool terminal_;
  bool line_open_ = false;  // a rewritten line is on screen without its newline
  Clock::time_point start_;
  Clock::time_point last_print_;
  std::string last_line_counts_;
};

}  // namespace kiln::compiler_cache
