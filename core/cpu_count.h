// How many threads a thread-count flag (--num-threads, --workers) may ask
// for. More threads than CPUs only add contention, and an unbounded count
// (--num-threads 100000) once exhausted the machine's process table.
#pragma once

#include <cstdint>
#include <string>

namespace kiln {

// Counts above this are refused outright by the flag parser: no machine
// kiln runs on has more CPUs, so such a count is a typo.
constexpr int64_t kMaxThreadsFlag = 1024;

// The CPUs this process may run on (its affinity mask), at least 1.
int available_cpus();

// `requested` capped at available_cpus(); says so once on stderr when it
// lowers the count. 0 (meaning "all CPUs") is returned unchanged.
int64_t cap_at_available_cpus(const std::string& flag, int64_t requested);

}  // namespace kiln
