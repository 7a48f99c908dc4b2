// Comm over MPI: nonblocking collectives completed by polling against a
// deadline, with heartbeats so a timed-out rank can name the peers that are
// not waiting with it (see comm.h).
// The C API only: OpenMPI and MPICH otherwise pull in their C++ bindings.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <thread>

#include "core/error.h"
#include "kiln/half.h"
#include "trainer/dist/comm_mpi.h"

namespace kiln::trainer::dist {

namespace {

using Clock = std::chrono::steady_clock;
constexpr int kHeartbeatTag = 7;
constexpr double kHeartbeatSeconds = 1.0;

// MPI has no bf16 type: bf16 values travel as MPI_UINT16_T, summed by this
// op, one f32 addition and one rounding per pair (kiln/half.h).
void sum_bf16_values(void* in, void* inout, int* count, MPI_Datatype*) {
  const auto* a = static_cast<const uint16_t*>(in);
  auto* b = static_cast<uint16_t*>(inout);
  for (int i = 0; i < *count; ++i) b[i] = kiln_f32_to_bf16(kiln_bf16_to_f32(a[i]) + kiln_bf16_to_f32(b[i]));
}

// Created on first use, after MPI_Init; freed by MPI_Finalize.
MPI_Op bf16_sum_op() {
  static MPI_Op op = [] {
    MPI_Op created = MPI_OP_NULL;
    MPI_Op_create(&sum_bf16_values, /*commute=*/1, &created);
    return created;
  }();
  return op;
}

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

class MpiComm : public Comm {
 public:
  // A communicator over `base`'s ranks (which it takes over) with a twin
  // for heartbeats, so they never match a collective's messages.
  explicit MpiComm(MPI_Comm base) : collectives_(base) {
    MPI_Comm_dup(collectives_, &heartbeats_);
    MPI_Comm_rank(collectives_, &rank_);
    MPI_Comm_size(collectives_, &size_);
    // Job ranks of this group's members, for messages.
    int world_rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    world_ranks_.resize(static_cast<size_t>(size_));
    MPI_Allgather(&world_rank, 1, MPI_INT, world_ranks_.data(), 1, MPI_INT, collectives_);
  }
  ~MpiComm() override {
    if (finalized_) return;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;
    for (HeartbeatSend& s : beat_sends_) MPI_Cancel(&s.request);
    for (HeartbeatSend& s : beat_sends_) MPI_Wait(&s.request, MPI_STATUS_IGNORE);
    MPI_Comm_free(&heartbeats_);
    MPI_Comm_free(&collectives_);
  }
  MpiComm(const MpiComm&) = delete;
  MpiComm& operator=(const MpiComm&) = delete;

  std::unique_ptr<Comm> split(int color, int key) override {
    MPI_Comm sub = MPI_COMM_NULL;
    if (MPI_Comm_split(collectives_, color, key, &sub) != MPI_SUCCESS)
      abort("MPI_Comm_split failed while forming the parallel groups");
    auto comm = std::make_unique<MpiComm>(sub);
    comm->timeout_seconds_ = timeout_seconds_;
    return comm;
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  void start_sum(std::span<float> data) override {
    start_request();
    MPI_Iallreduce(MPI_IN_PLACE, data.data(), static_cast<int>(data.size()), MPI_FLOAT, MPI_SUM, collectives_,
                   &pending_.back());
  }
  void start_sum(std::span<double> data) override {
    start_request();
    MPI_Iallreduce(MPI_IN_PLACE, data.data(), static_cast<int>(data.size()), MPI_DOUBLE, MPI_SUM, collectives_,
                   &pending_.back());
  }
  void start_max(std::span<float> data) override {
    start_request();
    MPI_Iallreduce(MPI_IN_PLACE, data.data(), static_cast<int>(data.size()), MPI_FLOAT, MPI_MAX, collectives_,
                   &pending_.back());
  }
  void start_reduce_scatter(std::span<const float> all, std::span<float> mine) override {
    if (all.size() != mine.size() * static_cast<size_t>(size_)) abort("internal: reduce-scatter of unequal blocks");
    start_request();
    MPI_Ireduce_scatter_block(all.data(), mine.data(), static_cast<int>(mine.size()), MPI_FLOAT, MPI_SUM, collectives_,
                              &pending_.back());
  }
  void start_all_gather(std::span<const float> mine, std::span<float> all) override {
    if (all.size() != mine.size() * static_cast<size_t>(size_)) abort("internal: all-gather of unequal blocks");
    start_request();
    MPI_Iallgather(mine.data(), static_cast<int>(mine.size()), MPI_FLOAT, all.data(), static_cast<int>(mine.size()),
                   MPI_FLOAT, collectives_, &pending_.back());
  }
  void start_sum_bf16(std::span<uint16_t> data) override {
    start_request();
    MPI_Iallreduce(MPI_IN_PLACE, data.data(), static_cast<int>(data.size()), MPI_UINT16_T, bf16_sum_op(), collectives_,
                   &pending_.back());
  }
  void start_reduce_scatter_bf16(std::span<const uint16_t> all, std::span<uint16_t> mine) override {
    if (all.size() != mine.size() * static_cast<size_t>(size_)) abort("internal: reduce-scatter of unequal blocks");
    start_request();
    MPI_Ireduce_scatter_block(all.data(), mine.data(), static_cast<int>(mine.size()), MPI_UINT16_T, bf16_sum_op(),
                              collectives_, &pending_.back());
  }
  void start_send(std::span<const float> data, int peer, int tag) override {
    start_request();
    MPI_Isend(data.data(), static_cast<int>(data.size()), MPI_FLOAT, peer, tag, collectives_, &pending_.back());
    point_to_point_ = true;
  }
  void start_recv(std::span<float> data, int peer, int tag) override {
    start_request();
    MPI_Irecv(data.data(), static_cast<int>(data.size()), MPI_FLOAT, peer, tag, collectives_, &pending_.back());
    point_to_point_ = true;
  }
  void start_barrier() override {
    start_request();
    MPI_Ibarrier(collectives_, &pending_.back());
  }

  void progress() override {
    int done = 0;  // requests that completed are freed here and read as done by wait()
    if (!pending_.empty()) MPI_Testall(static_cast<int>(pending_.size()), pending_.data(), &done, MPI_STATUSES_IGNORE);
  }

  void wait(const std::string& what) override { wait_oldest(pending_.size(), what); }

  uint64_t started() const override { return started_; }
  void wait_through(uint64_t n, const std::string& what) override {
    // pending_ holds the last pending_.size() requests started, in order.
    const uint64_t first = started_ - pending_.size();
    wait_oldest(n > first ? static_cast<size_t>(std::min<uint64_t>(n - first, pending_.size())) : 0, what);
  }

  std::vector<uint64_t> all_gather(uint64_t value, const std::string& what) override {
    std::vector<uint64_t> out(static_cast<size_t>(size_));
    start_request();
    MPI_Iallgather(&value, 1, MPI_UINT64_T, out.data(), 1, MPI_UINT64_T, collectives_, &pending_.back());
    wait(what);
    return out;
  }

  [[noreturn]] void abort(const std::string& message) override {
    std::fprintf(stderr, "kiln: error: rank %d: %s\n", world_ranks_.at(static_cast<size_t>(rank_)), message.c_str());
    std::fflush(stderr);
    std::fflush(stdout);
    MPI_Abort(MPI_COMM_WORLD, 1);
    std::_Exit(1);
  }

  void set_timeout_seconds(double seconds) override { timeout_seconds_ = seconds; }

  void finalize() {
    barrier("the final barrier");
    // Heartbeats still queued are from this last wait; drop them.
    std::vector<bool> heard(static_cast<size_t>(size_), false);
    drain_heartbeats(heard);
    for (HeartbeatSend& s : beat_sends_) MPI_Cancel(&s.request);
    for (HeartbeatSend& s : beat_sends_) MPI_Wait(&s.request, MPI_STATUS_IGNORE);
    beat_sends_.clear();
    MPI_Comm_free(&heartbeats_);
    MPI_Comm_free(&collectives_);
    finalized_ = true;
    MPI_Finalize();
  }

 private:
  void start_request() {
    pending_.emplace_back();
    ++started_;
  }

  // Completes the `count` oldest pending requests.
  void wait_oldest(size_t count, const std::string& what) {
    ++generation_;  // the same on every rank: each wait is one collective step
    if (count == 0) return;
    const auto start = Clock::now();
    auto next_beat =
        start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(kHeartbeatSeconds));
    std::vector<bool> heard(static_cast<size_t>(size_), false);
    heard[static_cast<size_t>(rank_)] = true;
    for (int polls = 0;; ++polls) {
      int done = 0;
      MPI_Testall(static_cast<int>(count), pending_.data(), &done, MPI_STATUSES_IGNORE);
      if (done) break;
      drain_heartbeats(heard);
      if (Clock::now() >= next_beat) {
        send_heartbeats();
        next_beat = Clock::now() +
                    std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(kHeartbeatSeconds));
      }
      if (seconds_since(start) > timeout_seconds_) abort(timeout_message(what, heard));
      // Spin briefly (collectives between ranks on one node take
      // microseconds), then yield the core to the compute threads.
      if (polls > 200) std::this_thread::sleep_for(std::chrono::microseconds(polls > 2000 ? 1000 : 50));
    }
    pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(count));
    if (pending_.empty()) point_to_point_ = false;
    reap_heartbeat_sends();
  }

  void send_heartbeats() {
    for (int peer = 0; peer < size_; ++peer) {
      if (peer == rank_) continue;
      // Each send owns its buffer: one may still be in flight next time.
      beat_sends_.push_back({MPI_REQUEST_NULL, std::make_unique<uint64_t>(generation_)});
      MPI_Isend(beat_sends_.back().value.get(), 1, MPI_UINT64_T, peer, kHeartbeatTag, heartbeats_,
                &beat_sends_.back().request);
    }
    reap_heartbeat_sends();
  }

  void reap_heartbeat_sends() {
    std::vector<HeartbeatSend> still;
    for (HeartbeatSend& s : beat_sends_) {
      int done = 0;
      MPI_Test(&s.request, &done, MPI_STATUS_IGNORE);
      if (!done) still.push_back(std::move(s));
    }
    beat_sends_.swap(still);
  }

  // A heartbeat counts only if its sender is waiting in this same
  // collective; older ones were queued while this rank was busy.
  void drain_heartbeats(std::vector<bool>& heard) {
    for (;;) {
      int flag = 0;
      MPI_Status status;
      MPI_Iprobe(MPI_ANY_SOURCE, kHeartbeatTag, heartbeats_, &flag, &status);
      if (!flag) return;
      uint64_t generation = 0;
      MPI_Recv(&generation, 1, MPI_UINT64_T, status.MPI_SOURCE, kHeartbeatTag, heartbeats_, MPI_STATUS_IGNORE);
      // Ranks exchanging messages (pipeline stages) wait different numbers
      // of times: any heartbeat during such a wait shows its sender alive.
      if (generation == generation_ || point_to_point_) heard[static_cast<size_t>(status.MPI_SOURCE)] = true;
    }
  }

  std::string timeout_message(const std::string& what, const std::vector<bool>& heard) const {
    std::string silent;
    for (int r = 0; r < size_; ++r)
      if (!heard[static_cast<size_t>(r)])
        silent += (silent.empty() ? "" : ", ") + std::to_string(world_ranks_.at(static_cast<size_t>(r)));
    char seconds[32];
    std::snprintf(seconds, sizeof(seconds), "%.0f", timeout_seconds_);
    std::string m = what + " did not complete within " + seconds + " s (--distributed-timeout-minutes); ";
    if (!silent.empty())
      m += "rank " + silent + " sent no heartbeat while this rank waited: it died or hangs; ending the job";
    else
      m += "every rank is waiting but the collective did not finish; ending the job";
    return m;
  }

  MPI_Comm collectives_ = MPI_COMM_NULL, heartbeats_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  std::vector<int> world_ranks_;
  bool finalized_ = false;
  double timeout_seconds_ = 600;
  struct HeartbeatSend {
    MPI_Request request;
    std::unique_ptr<uint64_t> value;
  };
  uint64_t generation_ = 0;
  std::vector<MPI_Request> pending_;  // started, not yet completed by a wait, oldest first
  uint64_t started_ = 0;              // requests started on this group so far
  bool point_to_point_ = false;       // pending_ holds a send or receive
  std::vector<HeartbeatSend> beat_sends_;
};

}  // namespace

bool mpi_available() { return true; }

std::unique_ptr<Comm> init_mpi_comm() {
  int provided = 0;
  if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
    throw Error("MPI_Init_thread failed; check the mpirun/srun launch (try: mpirun -np 1 kiln devices)");
  MPI_Comm world = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &world);
  return std::make_unique<MpiComm>(world);
}

void finalize_mpi_comm(std::unique_ptr<Comm> comm) { static_cast<MpiComm&>(*comm).finalize(); }

}  // namespace kiln::trainer::dist
