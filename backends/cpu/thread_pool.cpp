#include "thread_pool.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <system_error>

namespace kiln::cpu {

namespace {
// How long a worker spins for the next job before sleeping. Kernels within a
// training step follow each other within microseconds; a sleeping worker
// costs ~50 us to wake, so spin a little, but not so long that an idle
// process holds the cores.
constexpr auto kSpin = std::chrono::microseconds(200);

// Test hook: KILN_TEST_FAIL_THREAD_AT=N makes starting worker N (1-based;
// the caller is thread 0) fail as a full process table does (EAGAIN), so
// tests can check the failure path without exhausting the machine's PIDs.
int thread_to_fail() {
  const char* at = std::getenv("KILN_TEST_FAIL_THREAD_AT");
  return at != nullptr ? std::atoi(at) : 0;
}
}  // namespace

ThreadStartError::ThreadStartError(int index, int count, int error)
    : std::runtime_error("cannot start thread " + std::to_string(index) + " of " + std::to_string(count) + ": " +
                         std::strerror(error) + "; lower --num-threads or raise ulimit -u") {}

ThreadPool::ThreadPool(int num_threads) {
  if (num_threads <= 0) num_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  num_threads_ = num_threads;
  threads_.reserve(static_cast<size_t>(num_threads_));
  const int fail_at = thread_to_fail();
  for (int i = 1; i < num_threads_; ++i) {
    try {
      if (i == fail_at) throw std::system_error(EAGAIN, std::generic_category());
      threads_.emplace_back([this, i] { worker(i); });
    } catch (const std::system_error& e) {
      // The workers already started wait for a job: stop and join them, or
      // their std::thread destructors would call std::terminate.
      stop_and_join();
      throw ThreadStartError(i, num_threads_, e.code().value());
    }
  }
}

ThreadPool::~ThreadPool() { stop_and_join(); }

void ThreadPool::stop_and_join() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_.store(true);
    generation_.fetch_add(1);
  }
  wake_.notify_all();
  for (auto& t : threads_) t.join();
  threads_.clear();
}

void ThreadPool::worker(int index) {
  uint64_t seen = 0;
  for (;;) {
    auto spin_until = std::chrono::steady_clock::now() + kSpin;
    while (generation_.load(std::memory_order_acquire) == seen && std::chrono::steady_clock::now() < spin_until) {
      std::this_thread::yield();
    }
    if (generation_.load(std::memory_order_acquire) == seen) {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != seen; });
    }
    seen = generation_.load(std::memory_order_acquire);
    if (stop_.load()) return;
    (*job_)(index);
    pending_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

void ThreadPool::run(const std::function<void(int)>& fn) {
  if (num_threads_ == 1) {
    fn(0);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    job_ = &fn;
    pending_.store(num_threads_ - 1, std::memory_order_release);
    generation_.fetch_add(1, std::memory_order_acq_rel);
  }
  wake_.notify_all();
  fn(0);
  while (pending_.load(std::memory_order_acquire) != 0) std::this_thread::yield();
}

void ThreadPool::parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(1, grain);
  int64_t chunks = std::min<int64_t>(num_threads_, (n + grain - 1) / grain);
  if (chunks <= 1) {
    fn(0, n);
    return;
  }
  run([&](int t) {
    if (t >= chunks) return;
    int64_t begin = n * t / chunks, end = n * (t + 1) / chunks;
    if (begin < end) fn(begin, end);
  });
}

}  // namespace kiln::cpu
