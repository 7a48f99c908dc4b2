#include "compiler_cache/pool_progress.h"

#include <unistd.h>

#include <cmath>

namespace kiln::compiler_cache {
namespace {

std::string seconds_text(double s) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), s < 10 ? "%.1f s" : "%.0f s", s);
  return buf;
}

// The counts alone: a non-terminal log prints again when these change.
std::string counts_text(const ProgressCounts& c) {
  std::string out = "precompile: ";
  out += std::to_string(c.done) + "/" + std::to_string(c.total) + " done, ";
  out += std::to_string(c.failed) + " failed, ";
  out += std::to_string(c.running) + " running, ";
  out += std::to_string(c.locked) + " locked";
  return out;
}

}  // namespace

std::string progress_line(const ProgressCounts& c, double elapsed_s) {
  std::string out = counts_text(c);
  out += ", " + seconds_text(elapsed_s);
  const int left = c.queued_here;
  if (left == 0) return out;
  if (c.compiled_here == 0) return out + ", ETA ?";
  const double eta = elapsed_s / c.compiled_here * left;
  out += ", ETA " + seconds_text(std::ceil(eta));
  return out;
}

PoolProgress::PoolProgress(std::FILE* out) : PoolProgress(out, ::isatty(::fileno(out)) == 1) {}

PoolProgress::PoolProgress(std::FILE* out, bool terminal)
    : out_(out), terminal_(terminal), start_(Clock::now()), last_print_(start_ - std::chrono::seconds(60)) {}

void PoolProgress::print(const std::string& line) {
  if (terminal_) {
    std::fprintf(out_, "\r%s\033[K", line.c_str());
    line_open_ = true;
  } else {
    std::fprintf(out_, "%s\n", line.c_str());
  }
  std::fflush(out_);
}

void PoolProgress::update(const ProgressCounts& c, Clock::time_point now) {
  const auto since_last = now - last_print_;
  if (since_last < std::chrono::seconds(1)) return;
  const std::string counts = counts_text(c);
  if (!terminal_ && counts == last_line_counts_ && since_last < std::chrono::seconds(10)) return;
  print(progress_line(c, std::chrono::duration<double>(now - start_).count()));
  last_line_counts_ = counts;
  last_print_ = now;
}

void PoolProgress::message(const std::string& line) {
  if (line_open_) std::fputs("\r\033[K", out_);
  line_open_ = false;
  std::fprintf(out_, "%s\n", line.c_str());
  std::fflush(out_);
  // The rewritten line comes back at the next update.
  if (terminal_) last_print_ = Clock::now() - std::chrono::seconds(60);
}

void PoolProgress::finish(const ProgressCounts& c, Clock::time_point now) {
  print(progress_line(c, std::chrono::duration<double>(now - start_).count()));
  if (line_open_) std::fputc('\n', out_);
  line_open_ = false;
  std::fflush(out_);
}

}  // namespace kiln::compiler_cache
