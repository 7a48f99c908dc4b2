// Where a run's time goes (kiln train --profile, KILN_PROFILE=1), measured
// on the host the same way for every backend: graph::Executable times each
// step it runs, a compiled piece on the plugin's device or on the cpu
// fallback, a copy between the two, or a host collective, and adds it here.
//
// A piece is one plugin execute call, and execute may return before the
// device is done (docs/PLUGIN_GUIDE.md, section 2): while a profile records,
// the executable synchronizes the device after each piece and copy, so each
// one's time is its own and not the next step's wait. That costs a
// synchronize per step while profiling and nothing otherwise: executables
// look at active() once per run and time nothing when it is null.
//
// The report names what it measured: per device the pieces' time, the
// copies' time and bytes, and the pieces by time with the ops each holds.
// The plugin runs a piece as a whole, so a piece's time is not split
// between its ops here (the cpu backend's own per-op table, KILN_CPU_PROFILE,
// times its nodes one by one).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

namespace kiln::graph {

class RunProfile {
 public:
  enum class Where { kPlugin, kFallback, kCopy, kCollective };

  // What a timed step is; steps with the same key add up in one row (the
  // identical pieces of N layers, the same copy in every micro-batch).
  struct Key {
    std::string graph;  // the executable's name (Executable::set_name)
    Where where;
    std::string device;  // backend name; for a copy "from -> to"
    std::string ops;     // the op mix of a piece ("matmul x4, add x2"), a collective's op
    auto tie() const { return std::tie(graph, where, device, ops); }
    bool operator<(const Key& o) const { return tie() < o.tie(); }
  };

  // The profile executables record into, or null (profiling off).
  static RunProfile* active();

  // Makes `profile` the active one for its lifetime; its clock starts here.
  class Recording {
   public:
    explicit Recording(RunProfile& profile);
    ~Recording();
    Recording(const Recording&) = delete;
    Recording& operator=(const Recording&) = delete;
  };

  // A row for `key`, found or made; `step_id` tells apart the steps that
  // share it (counted as its pieces). Returns the row's id for add().
  int row(const Key& key, const void* step_id);
  void add(int row, double seconds, uint64_t bytes = 0);

  // Seconds since recording began (or the last restart).
  double wall_seconds() const;
  // Zeroes every row and restarts the clock. The rows stay, and executables
  // go on adding to them: the trainer leaves the first iteration's one-time
  // costs (first executes, kernels a driver builds on first use) out.
  void restart();

  // The table: per device the pieces' time, copies' time and bytes, host
  // collectives, the rest of the wall time since recording began (or the
  // last restart), and the
  // `top` pieces by time. `title` heads it ("kiln profile: 8 iterations").
  std::string report(const std::string& title, int top = 10) const;

 private:
  struct Row {
    Key key;
    double seconds = 0;
    uint64_t calls = 0, bytes = 0;
    std::vector<const void*> steps;  // distinct steps behind the row
  };
  mutable std::mutex mutex_;  // executables may run on more than one thread
  std::map<Key, int> index_;
  std::vector<Row> rows_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

}  // namespace kiln::graph
