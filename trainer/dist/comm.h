// The process group of a training job. Under `mpirun`/`srun` (and a build
// with MPI) it is MPI_COMM_WORLD; otherwise a single process, so `kiln train`
// without a launcher behaves exactly as before and never touches MPI.
//
// Collectives are nonblocking and completed by polling against a deadline,
// never by a plain blocking MPI call: if a peer dies or hangs, the waiting
// ranks print which ranks stopped answering and end the whole job with a
// non-zero status instead of hanging until the batch system's time limit.
// While a rank waits it sends a heartbeat to every peer once a second, so at
// the deadline it can name the ranks that have not been waiting with it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace kiln::trainer::dist {

class Comm {
 public:
  virtual ~Comm() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  bool is_last_rank() const { return rank() == size() - 1; }

  // Start an in-place sum across ranks. The data must stay valid and
  // untouched until wait(). Every rank must start the same collectives in
  // the same order.
  virtual void start_sum(std::span<float> data) = 0;
  virtual void start_sum(std::span<double> data) = 0;
  // The same with the elementwise maximum.
  virtual void start_max(std::span<float> data) = 0;
  virtual void start_barrier() = 0;
  // The distributed optimizer's pair (MPI_Reduce_scatter_block and
  // MPI_Allgather): `all` holds size() equal blocks of mine.size() floats.
  // reduce_scatter sums every rank's `all` and leaves block rank() of the
  // sum in `mine`; all_gather puts every rank's `mine` into its block of
  // `all`. Both buffers stay untouched until wait().
  virtual void start_reduce_scatter(std::span<const float> all, std::span<float> mine) = 0;
  virtual void start_all_gather(std::span<const float> mine, std::span<float> all) = 0;
  // The same sums of bf16 values (--main-grads-dtype bf16), as a bf16
  // NCCL reduction: each addition of two ranks' values in f32, rounded to
  // bf16 (to nearest even) before the next; in what order ranks' values
  // meet is MPI's, as NCCL's ring order is NCCL's (with two ranks there is
  // one addition).
  virtual void start_sum_bf16(std::span<uint16_t> data) = 0;
  virtual void start_reduce_scatter_bf16(std::span<const uint16_t> all, std::span<uint16_t> mine) = 0;
  // Point-to-point, for pipeline parallelism: send `data` to the group's
  // rank `peer`, or receive into it from `peer`. Messages of one tag between
  // two ranks arrive in the order sent. The data stays untouched until
  // wait(), which completes these with the collectives.
  virtual void start_send(std::span<const float> data, int peer, int tag) = 0;
  virtual void start_recv(std::span<float> data, int peer, int tag) = 0;
  // Completes every started collective. `what` names them in the error if
  // the deadline passes (then the job is aborted; this does not return).
  virtual void wait(const std::string& what) = 0;
  // How many collectives this group has started so far. wait_through(n)
  // completes those among the first n started that are still pending and
  // leaves later ones running: --overlap-param-gather waits for one
  // bucket's all-gather at a time. Every rank must call it where it calls
  // it on the others, as wait().
  virtual uint64_t started() const = 0;
  virtual void wait_through(uint64_t n, const std::string& what) = 0;
  // Moves the started collectives along without waiting for them: MPI's
  // nonblocking collectives advance only inside MPI calls, so a rank that
  // computes between start and wait() calls this now and then.
  virtual void progress() {}

  // Every rank's value, in rank order (blocking, with the same deadline).
  virtual std::vector<uint64_t> all_gather(uint64_t value, const std::string& what) = 0;

  void sum(std::span<double> data, const std::string& what) {
    start_sum(data);
    wait(what);
  }
  void sum(std::span<float> data, const std::string& what) {
    start_sum(data);
    wait(what);
  }
  void sum_bf16(std::span<uint16_t> data, const std::string& what) {
    start_sum_bf16(data);
    wait(what);
  }
  void barrier(const std::string& what) {
    start_barrier();
    wait(what);
  }

  // The sub-group of the ranks passing the same `color`, ordered by `key`
  // (MPI_Comm_split): tensor- and data-parallel groups. Collective over
  // this group. Messages about a sub-group's ranks use job (world) ranks.
  virtual std::unique_ptr<Comm> split(int color, int key) = 0;

  // Ends every rank of the job now with status 1 after printing
  // "kiln: error: rank R: <message>" (one line). Does not return.
  [[noreturn]] virtual void abort(const std::string& message) = 0;

  // How long a rank waits in a collective before declaring the job dead.
  virtual void set_timeout_seconds(double seconds) = 0;
};

// The job's process group, for one `kiln train` invocation: initialises MPI
// when the process was started by an MPI launcher and finalises it on a
// normal exit. Throws kiln::Error when launched by mpirun but this build has
// no MPI.
class World {
 public:
  World();
  ~World();
  World(const World&) = delete;
  World& operator=(const World&) = delete;
  Comm& comm() { return *comm_; }
  // True when the environment says an MPI launcher started this process.
  static bool launched_by_mpi();

 private:
  std::unique_ptr<Comm> comm_;
};

// The single-process group (rank 0 of 1): every collective is the identity.
std::unique_ptr<Comm> make_single_process_comm();

}  // namespace kiln::trainer::dist
