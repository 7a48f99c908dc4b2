#include "trainer/report/run_profile_report.h"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>

namespace kiln::trainer {

void RunProfileReport::prepare(const TrainConfig& cfg) {
  if (cfg.profile) setenv("KILN_CPU_PROFILE", "1", /*overwrite=*/0);
}

RunProfileReport::RunProfileReport(const Setup& run) : run_(run), counted_from_(run.progress.iteration) {
  if (!run.cfg.profile) return;
  profile_ = std::make_unique<graph::RunProfile>();
  recording_ = std::make_unique<graph::RunProfile::Recording>(*profile_);
}

void RunProfileReport::iteration_done() {
  if (!profile_ || first_seconds_ >= 0 || run_.progress.iteration >= run_.cfg.train_iters) return;
  first_seconds_ = profile_->wall_seconds();
  profile_->restart();
  counted_from_ = run_.progress.iteration;
}

void RunProfileReport::finish() {
  if (!profile_) return;
  recording_.reset();
  const int64_t iterations = run_.progress.iteration - counted_from_;
  std::string title = "kiln profile";
  if (run_.comm.size() > 1) title += fmt::format(" (rank {} of {})", run_.comm.rank(), run_.comm.size());
  if (iterations == 1) {
    title += fmt::format(": iteration {}", counted_from_ + 1);
  } else {
    title += fmt::format(": iterations {}-{}", counted_from_ + 1, run_.progress.iteration);
  }
  if (first_seconds_ >= 0)
    title += fmt::format(" (iteration {}, {:.1f} ms with its one-time costs, left out)", counted_from_,
                         1e3 * first_seconds_);
  const std::string table = profile_->report(title);
  std::fwrite(table.data(), 1, table.size(), stdout);  // one write: ranks' tables do not interleave by line
  std::fflush(stdout);
  profile_.reset();
}

}  // namespace kiln::trainer
