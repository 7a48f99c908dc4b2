#include "core/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <exception>

namespace kiln {

ThreadPool::ThreadPool(size_t num_threads) {
  if (num_threads == 0) num_threads = std::max(1u, std::thread::hardware_concurrency());
  workers_.reserve(num_threads);
  for (size_t i = 0; i < num_threads; ++i) workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (std::thread& t : workers_) t.join();
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
