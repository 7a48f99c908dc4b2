// Fork-join pool for the CPU backend's kernels.
//
// One pool per opened device, shared by GEMM and every other kernel, so two
// pools never fight over the cores (a BLAS pool spinning against an OpenMP
// pool cost PyTorch 50% on a 2-core machine). Workers spin briefly after a
// job (kernels arrive back to back within a step), then sleep on a condition
// variable so an idle process burns no CPU.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

namespace kiln::cpu {

// Thrown by ThreadPool's constructor when a worker cannot be started (a
// full process table or ulimit -u: EAGAIN); no worker is left running.
class ThreadStartError : public std::runtime_error {
 public:
  ThreadStartError(int index, int count, int error);
};

class ThreadPool {
 public:
  // num_threads includes the calling thread; 0 means hardware concurrency.
  // Throws ThreadStartError when a worker cannot be started.
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return num_threads_; }

  // Runs fn(thread_index) on every thread (the caller is index 0) and
  // returns when all are done. Not reentrant: call it from one thread.
  void run(const std::function<void(int)>& fn);

  // Splits [0, n) into contiguous chunks of at least `grain` items and
  // calls fn(begin, end) for each, across the pool.
  void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

 private:
  void worker(int index);
  void stop_and_join();

  int num_threads_;
  std::vector<std::thread> threads_;
  const std::function<void(int)>* job_ = nullptr;
  std::atomic<uint64_t> generation_{0};
  std::atomic<int> pending_{0};
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::condition_variable wake_;
};

}  // namespace kiln::cpu
