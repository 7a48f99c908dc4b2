// Issue 13 item 1: a pool whose N-th thread cannot be started (EAGAIN from a
// full process table or ulimit -u) joins the threads it already started and
// throws one line; it used to call std::terminate from the destructors of
// the joinable threads. KILN_TEST_FAIL_THREAD_AT makes the failure happen
// without exhausting the machine's PIDs.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "core/error.h"
#include "core/thread_pool.h"
#include "thread_pool.h"

namespace {

// Sets KILN_TEST_FAIL_THREAD_AT for one scope.
class FailThreadAt {
 public:
  explicit FailThreadAt(int n) { setenv("KILN_TEST_FAIL_THREAD_AT", std::to_string(n).c_str(), 1); }
  ~FailThreadAt() { unsetenv("KILN_TEST_FAIL_THREAD_AT"); }
  FailThreadAt(const FailThreadAt&) = delete;
  FailThreadAt& operator=(const FailThreadAt&) = delete;
};

TEST(ThreadStartFailure, HostPoolJoinsStartedThreadsAndThrowsOneLine) {
  const FailThreadAt hook(3);  // threads 1 and 2 start and must be joined
  try {
    kiln::ThreadPool pool(4);
    FAIL() << "the pool started although thread 3 could not be";
  } catch (const kiln::Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "cannot start thread 3 of 4: Resource temporarily unavailable; lower --num-threads / --workers or "
              "raise ulimit -u");
  }
}

TEST(ThreadStartFailure, CpuBackendPoolJoinsStartedWorkersAndThrowsOneLine) {
  const FailThreadAt hook(2);  // worker 1 starts and must be joined
  try {
    kiln::cpu::ThreadPool pool(4);
    FAIL() << "the pool started although worker 2 could not be";
  } catch (const kiln::cpu::ThreadStartError& e) {
    EXPECT_EQ(std::string(e.what()),
              "cannot start thread 2 of 4: Resource temporarily unavailable; lower --num-threads or raise ulimit -u");
  }
}

TEST(ThreadStartFailure, PoolsWorkWhenEveryThreadStarts) {
  kiln::ThreadPool host(3);
  EXPECT_EQ(host.submit([] { return 7; }).get(), 7);
  kiln::cpu::ThreadPool cpu(3);
  int sum = 0;
  cpu.parallel_for(
      3, 1, [&](int64_t lo, int64_t hi) { __atomic_add_fetch(&sum, static_cast<int>(hi - lo), __ATOMIC_RELAXED); });
  EXPECT_EQ(sum, 3);
}

}  // namespace
