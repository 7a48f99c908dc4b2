#include "core/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <system_error>

#include "core/error.h"

namespace kiln {

namespace {

// Test hook: KILN_TEST_FAIL_THREAD_AT=N makes starting the pool's N-th
// thread (1-based) fail as a full process table does (EAGAIN), so tests can
// check the failure path without exhausting the machine's PIDs.
size_t thread_to_fail() {
  const char* at = std::getenv("KILN_TEST_FAIL_THREAD_AT");
  return at != nullptr ? static_cast<size_t>(std::strtoull(at, nullptr, 10)) : 0;
}

}  // namespace

ThreadPool::ThreadPool(size_t num_threads) {
  if (num_threads == 0) num_threads = std::max(1u, std::thread::hardware_concurrency());
  workers_.reserve(num_threads);
  const size_t fail_at = thread_to_fail();
  for (size_t i = 0; i < num_threads; ++i) {
    try {
      if (i + 1 == fail_at) throw std::system_error(EAGAIN, std::generic_category());
      workers_.emplace_back([this] { worker_loop(); });
    } catch (const std::system_error& e) {
      // The threads already started wait on cv_: stop and join them, or
      // their std::thread destructors would call std::terminate.
      stop_and_join();
      throw Error("cannot start thread " + std::to_string(i + 1) + " of " + std::to_string(num_threads) + ": " +
                  std::strerror(e.code().value()) + "; lower --num-threads / --workers or raise ulimit -u");
    }
  }
}

ThreadPool::~ThreadPool() { stop_and_join(); }

void ThreadPool::stop_and_join() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : workers_) t.join();
  workers_.clear();
}

void ThreadPool::enqueue(std::function<void()> task) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(std::move(task));
  }
  cv_.notify_one();
}

void ThreadPool::worker_loop() {
  for (;;) {
    std::function<void()> task;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping and drained
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();
  }
}

namespace {

// Shared with helper tasks, which may start only after parallel_for has
// returned (all chunks taken by then); they must find live state.
struct ForState {
  size_t begin, end, grain, chunks;
  const std::function<void(size_t, size_t)>* body;
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  std::mutex mutex;
  std::condition_variable cv;
  size_t done = 0;
  std::exception_ptr error;

  // Takes chunks until none are left. A chunk once taken is always counted
  // as done, even when skipped after a failure, so the waiter can count.
  void run() {
    for (;;) {
      size_t c = next.fetch_add(1);
      if (c >= chunks) return;
      if (!failed.load()) {
        size_t lo = begin + c * grain;
        size_t hi = lo + std::min(grain, end - lo);
        try {
          (*body)(lo, hi);
        } catch (...) {
          std::lock_guard<std::mutex> lock(mutex);
          if (!error) error = std::current_exception();
          failed = true;
        }
      }
      std::lock_guard<std::mutex> lock(mutex);
      if (++done == chunks) cv.notify_all();
    }
  }
};

}  // namespace

void ThreadPool::parallel_for(size_t begin, size_t end, const std::function<void(size_t, size_t)>& body, size_t grain) {
  if (end <= begin) return;
  const size_t n = end - begin;
  if (grain == 0) grain = std::max<size_t>(1, n / (4 * (size() + 1)));
  auto state = std::make_shared<ForState>();
  state->begin = begin;
  state->end = end;
  state->grain = grain;
  state->chunks = (n + grain - 1) / grain;
  state->body = &body;

  const size_t helpers = std::min(size(), state->chunks - 1);
  for (size_t i = 0; i < helpers; ++i) enqueue([state] { state->run(); });
  state->run();

  std::unique_lock<std::mutex> lock(state->mutex);
  state->cv.wait(lock, [&] { return state->done == state->chunks; });
  if (state->error) std::rethrow_exception(state->error);
}

}  // namespace kiln
