// The cache's persistent use counters behind `kiln cache stats`: an
// append-only log, <root>/usage.log, one JSON line per process (each
// `kiln train`, each precompile worker) with what that process did:
//   {"unix":..,"host":..,"pid":..,"hits":..,"misses":..,"saved_s":..,"compile_s":..}
// hits: executables loaded from the cache; misses: compilations the cache
// did not spare; saved_s: the compile time those hits' entries recorded
// (what compiling them again would have cost); compile_s: time spent on
// the misses. Each line goes out in one write() on an O_APPEND descriptor,
// so concurrent processes never interleave within a line on a local file
// system; a reader skips any line that does not parse (a torn line on a
// network file system costs one record, never the log).
#pragma once

#include <cstdint>
#include <string>

namespace kiln::compiler_cache {

struct UsageRecord {
  int64_t hits = 0;
  int64_t misses = 0;
  double seconds_saved = 0;
  double compile_seconds = 0;
  bool empty() const { return hits == 0 && misses == 0; }
};

struct UsageTotals {
  UsageRecord sum;
  int64_t records = 0;  // lines read
  int64_t skipped = 0;  // lines that did not parse
  int64_t first_unix = 0, last_unix = 0;
};

std::string usage_log_path(const std::string& root);

// Appends one line for this process (best effort: a cache that cannot be
// written is left alone). Returns whether it was written.
bool append_usage(const std::string& root, const UsageRecord& record);

UsageTotals read_usage(const std::string& root);

}  // namespace kiln::compiler_cache
