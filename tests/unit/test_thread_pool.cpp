#include <gtest/gtest.h>

#include <atomic>
#include <numeric>
#include <stdexcept>
#include <vector>

#include "core/thread_pool.h"

namespace {

TEST(ThreadPool, SubmitReturnsValues) {
  kiln::ThreadPool pool(2);
  std::vector<std::future<int>> results;
  for (int i = 0; i < 100; ++i) results.push_back(pool.submit([i] { return i * i; }));
  for (int i = 0; i < 100; ++i) EXPECT_EQ(results[i].get(), i * i);
}

TEST(ThreadPool, SubmitPropagatesExceptions) {
  kiln::ThreadPool pool(1);
  auto f = pool.submit([]() -> int { throw std::runtime_error("boom"); });
  EXPECT_THROW(f.get(), std::runtime_error);
  // The worker survives a throwing task.
  EXPECT_EQ(pool.submit([] { return 7; }).get(), 7);
}

TEST(ThreadPool, DestructorRunsQueuedTasks) {
  std::atomic<int> ran{0};
  std::vector<std::future<void>> futures;
  {
    kiln::ThreadPool pool(1);
    for (int i = 0; i < 50; ++i) futures.push_back(pool.submit([&] { ++ran; }));
  }
  EXPECT_EQ(ran.load(), 50);
  for (auto& f : futures) f.get();  // no broken promises
}

TEST(ThreadPool, ParallelForCoversRangeOnce) {
  kiln::ThreadPool pool(3);
  for (size_t grain : {0, 1, 7, 1000}) {
    std::vector<std::atomic<int>> hits(1001);
    pool.parallel_for(
        5, 1001,
        [&](size_t lo, size_t hi) {
          for (size_t i = lo; i < hi; ++i) ++hits[i];
        },
        grain);
    for (size_t i = 0; i < hits.size(); ++i) EXPECT_EQ(hits[i].load(), i < 5 ? 0 : 1) << i;
  }
}

TEST(ThreadPool, ParallelForEmptyRange) {
  kiln::ThreadPool pool(2);
  bool called = false;
  pool.parallel_for(10, 10, [&](size_t, size_t) { called = true; });
  EXPECT_FALSE(called);
}

TEST(ThreadPool, ParallelForRethrows) {
  kiln::ThreadPool pool(2);
  EXPECT_THROW(pool.parallel_for(
                   0, 100,
                   [](size_t lo, size_t) {
                     if (lo == 0) throw std::runtime_error("chunk failed");
                   },
                   1),
               std::runtime_error);
  // Still usable afterwards.
  std::atomic<size_t> sum{0};
  pool.parallel_for(0, 10, [&](size_t lo, size_t hi) {
    for (size_t i = lo; i < hi; ++i) sum += i;
  });
  EXPECT_EQ(sum.load(), 45u);
}

// Every worker blocked in an outer task that itself runs a parallel_for: only
// the calling thread's own participation lets this finish.
TEST(ThreadPool, NestedParallelForDoesNotDeadlock) {
  kiln::ThreadPool pool(2);
  std::atomic<size_t> total{0};
  std::vector<std::future<void>> outer;
  for (int t = 0; t < 4; ++t) {
    outer.push_back(pool.submit([&] {
      pool.parallel_for(
          0, 100, [&](size_t lo, size_t hi) { total += hi - lo; }, 3);
    }));
  }
  for (auto& f : outer) f.get();
  EXPECT_EQ(total.load(), 400u);
}

}  // namespace
