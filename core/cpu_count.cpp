#include "core/cpu_count.h"

#include <sched.h>

#include <algorithm>
#include <cstdio>
#include <thread>

namespace kiln {

int available_cpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

int64_t cap_at_available_cpus(const std::string& flag, int64_t requested) {
  const int64_t cpus = available_cpus();
  if (requested <= cpus) return requested;
  std::fprintf(stderr, "kiln: %s %lld is more than the %lld CPUs this process may use; using %lld\n", flag.c_str(),
               static_cast<long long>(requested), static_cast<long long>(cpus), static_cast<long long>(cpus));
  return cpus;
}

}  // namespace kiln
