// A small task pool for host-side work (data preprocessing, compile jobs).
// Device kernels do not use it: each backend owns its own threads.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace kiln {

class ThreadPool {
 public:
  // 0 threads means one per hardware thread. Throws kiln::Error, with no
  // thread left running, when a thread cannot be started (EAGAIN).
  explicit ThreadPool(size_t num_threads = 0);
  // Runs every task already submitted, then joins the workers, so no
  // future handed out is left without a value.
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  size_t size() const { return workers_.size(); }

  // Queues fn(); exceptions it throws come out of the future's get().
  template <class F>
  auto submit(F&& fn) -> std::future<std::invoke_result_t<std::decay_t<F>>> {
    using R = std::invoke_result_t<std::decay_t<F>>;
    // std::function needs a copyable callable; packaged_task is move-only.
    auto task = std::make_shared<std::packaged_task<R()>>(std::forward<F>(fn));
    std::future<R> result = task->get_future();
    enqueue([task] { (*task)(); });
    return result;
  }

  // Calls body(lo, hi) over disjoint chunks covering [begin, end) and
  // returns when all are done; rethrows the first exception. The calling
  // thread works too, so nesting inside a pool task cannot deadlock.
  // grain 0 picks about four chunks per thread.
  void parallel_for(size_t begin, size_t end, const std::function<void(size_t, size_t)>& body, size_t grain = 0);

 private:
  void enqueue(std::function<void()> task);
  void worker_loop();
  void stop_and_join();

  std::vector<std::thread> workers_;
  std::deque<std::function<void()>> queue_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool stopping_ = false;
};

}  // namespace kiln
