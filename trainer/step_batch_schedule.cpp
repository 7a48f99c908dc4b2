#include "trainer/step_batch_schedule.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "core/error.h"

namespace kiln::trainer {

namespace {

const char* const kFlag = "--step-batch-size-schedule";

// Megatron's _parse_numeric_value: int(float(number) * suffix), so "2.4B"
// is 2400000000 (the double product truncated, as Python does).
int64_t parse_number(const std::string& word, const std::string& entry) {
  std::string s = word;
  double scale = 1;
  if (!s.empty()) {
    const char suffix = static_cast<char>(std::toupper(static_cast<unsigned char>(s.back())));
    const double scales[] = {1e12, 1e9, 1e6, 1e3};
    const char* const suffixes = "TBMK";
    for (int i = 0; i < 4; ++i)
      if (suffix == suffixes[i]) {
        scale = scales[i];
        s.pop_back();
      }
  }
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(s.c_str(), &end);
  const double scaled = v * scale;
  if (s.empty() || *end != '\0' || errno == ERANGE || !std::isfinite(scaled) || scaled < 0 || scaled > 9.2e18)
    throw Error(std::string(kFlag) + ": '" + word + "' in entry \"" + entry +
                "\" is not a non-negative number (a number with an optional K, M, B or T suffix, e.g. 2.4B)");
  return static_cast<int64_t>(scaled);
}

}  // namespace

StepBatchSchedule::StepBatchSchedule(const std::string& text, int64_t seq_length) : text_(text) {
  std::string spaced = text;
  std::replace(spaced.begin(), spaced.end(), ',', ' ');
  std::istringstream in(spaced);
  for (std::string entry; in >> entry;) {
    const size_t colon = entry.find(':');
    if (colon == std::string::npos)
      throw Error(std::string(kFlag) + ": invalid schedule entry \"" + entry +
                  "\"; expected format THRESHOLD:BATCH_SIZE, e.g. \"0:16 2.4B:320\"");
    const int64_t tokens = parse_number(entry.substr(0, colon), entry);
    const int64_t batch = parse_number(entry.substr(colon + 1), entry);
    entries_.emplace_back(tokens / seq_length, batch);  // thresholds are tokens
  }
  if (entries_.empty())
    throw Error(std::string(kFlag) + ": the schedule has no entries; give THRESHOLD:BATCH_SIZE pairs, e.g. \"0:16\"");
  std::stable_sort(entries_.begin(), entries_.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  if (entries_.front().first != 0)
    throw Error(std::string(kFlag) + ": first schedule entry must have threshold 0, got " +
                std::to_string(entries_.front().first) + " samples; start the schedule with 0:BATCH_SIZE");
  for (size_t i = 1; i < entries_.size(); ++i)
    if (entries_[i].first <= entries_[i - 1].first)
      throw Error(std::string(kFlag) + ": schedule thresholds must be strictly increasing, got " +
                  std::to_string(entries_[i - 1].first) + " before " + std::to_string(entries_[i].first) +
                  " samples (tokens / --seq-length); make each threshold at least --seq-length tokens past the last");
  for (const auto& [threshold, batch] : entries_)
    if (batch <= 0)
      throw Error(std::string(kFlag) + ": batch size must be positive, got " + std::to_string(batch) +
                  " at threshold " + std::to_string(threshold) + " samples");
}

int64_t StepBatchSchedule::max_batch() const {
  int64_t most = 0;
  for (const auto& entry : entries_) most = std::max(most, entry.second);
  return most;
}

int64_t StepBatchSchedule::global_batch(int64_t consumed) const {
  int64_t batch = entries_.front().second;
  for (const auto& [threshold, size] : entries_) {
    if (consumed < threshold) break;
    batch = size;
  }
  return batch;
}

// Both walk the schedule an entry at a time: within an entry every step
// takes its batch, so the steps to the next threshold are a ceiling division.
int64_t StepBatchSchedule::train_iters(int64_t train_samples) const {
  int64_t iterations = 0, consumed = 0;
  for (size_t i = 0; i < entries_.size() && consumed < train_samples; ++i) {
    const int64_t batch = entries_[i].second;
    const int64_t until = i + 1 < entries_.size() ? std::min(entries_[i + 1].first, train_samples) : train_samples;
    if (consumed >= until) continue;
    const int64_t steps = (until - consumed + batch - 1) / batch;
    iterations += steps;
    consumed += steps * batch;
  }
  return iterations;
}

int64_t StepBatchSchedule::consumed_after(int64_t iterations) const {
  int64_t consumed = 0;
  for (size_t i = 0; i < entries_.size() && iterations > 0; ++i) {
    const int64_t batch = entries_[i].second;
    int64_t steps = iterations;  // the last entry takes all that are left
    if (i + 1 < entries_.size()) {
      if (consumed >= entries_[i + 1].first) continue;
      steps = std::min(iterations, (entries_[i + 1].first - consumed + batch - 1) / batch);
    }
    consumed += steps * batch;
    iterations -= steps;
  }
  return consumed;
}

}  // namespace kiln::trainer
