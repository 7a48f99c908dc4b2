#include "graph/run_profile.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>

namespace kiln::graph {

namespace {

std::atomic<RunProfile*> g_active{nullptr};

std::string where_name(RunProfile::Where w) {
  switch (w) {
    case RunProfile::Where::kPlugin: return "plugin";
    case RunProfile::Where::kFallback: return "fallback";
    case RunProfile::Where::kCopy: return "copies";
    case RunProfile::Where::kCollective: return "host collectives";
  }
  return "?";
}

// "opencl plugin", "cpu fallback", "copies opencl -> cpu", "host collectives".
std::string place(RunProfile::Where w, const std::string& device) {
  switch (w) {
    case RunProfile::Where::kPlugin:
    case RunProfile::Where::kFallback: return device + " " + where_name(w);
    case RunProfile::Where::kCopy: return "copies " + device;
    case RunProfile::Where::kCollective: return where_name(w);
  }
  return "?";
}

double share(double part, double whole) { return whole > 0 ? 100.0 * part / whole : 0.0; }

}  // namespace

RunProfile* RunProfile::active() { return g_active.load(std::memory_order_relaxed); }

RunProfile::Recording::Recording(RunProfile& profile) {
  profile.start_ = std::chrono::steady_clock::now();
  g_active.store(&profile);
}

RunProfile::Recording::~Recording() { g_active.store(nullptr); }

int RunProfile::row(const Key& key, const void* step_id) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto [it, added] = index_.emplace(key, static_cast<int>(rows_.size()));
  if (added) rows_.push_back(Row{key, 0, 0, 0, {}});
  Row& r = rows_[static_cast<size_t>(it->second)];
  if (std::find(r.steps.begin(), r.steps.end(), step_id) == r.steps.end()) r.steps.push_back(step_id);
  return it->second;
}

void RunProfile::add(int row, double seconds, uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  Row& r = rows_.at(static_cast<size_t>(row));
  r.seconds += seconds;
  r.bytes += bytes;
  ++r.calls;
}

double RunProfile::wall_seconds() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void RunProfile::restart() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (Row& r : rows_) {
    r.seconds = 0;
    r.calls = r.bytes = 0;
  }
  start_ = std::chrono::steady_clock::now();
}

std::string RunProfile::report(const std::string& title, int top) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  // Per place (device and role), in the order plugin, fallback, copies, collectives.
  struct Total {
    double seconds = 0;
    uint64_t calls = 0, bytes = 0;
  };
  std::map<std::pair<RunProfile::Where, std::string>, Total> totals;
  double timed = 0;
  for (const Row& r : rows_) {
    Total& t = totals[{r.key.where, r.key.where == Where::kCollective ? std::string() : r.key.device}];
    t.seconds += r.seconds;
    t.calls += r.calls;
    t.bytes += r.bytes;
    timed += r.seconds;
  }
  // Milliseconds to the microsecond: a small piece takes well under one.
  std::string out = fmt::format("{}, {:.1f} ms of wall time\n", title, 1e3 * wall);
  out += fmt::format("  {:<34} {:>10} {:>7} {:>8} {:>10}\n", "time in", "ms", "share", "calls", "MiB");
  for (const auto& [at, t] : totals) {
    if (t.calls == 0) continue;  // ran only before a restart
    const std::string mib =
        at.first == Where::kCopy ? fmt::format("{:.2f}", static_cast<double>(t.bytes) / (1 << 20)) : "";
    std::string line = fmt::format("  {:<34} {:>10.3f} {:>6.1f}% {:>8} {:>10}", place(at.first, at.second),
                                   1e3 * t.seconds, share(t.seconds, wall), t.calls, mib);
    line.erase(line.find_last_not_of(' ') + 1);  // no MiB column but for copies
    out += line + "\n";
  }
  const double rest = std::max(0.0, wall - timed);
  out += fmt::format("  {:<34} {:>10.3f} {:>6.1f}%   (feeding inputs, reading results, host-side work)\n",
                     "host, outside the graphs", 1e3 * rest, share(rest, wall));

  std::vector<const Row*> pieces;
  for (const Row& r : rows_)
    if ((r.key.where == Where::kPlugin || r.key.where == Where::kFallback) && r.calls > 0) pieces.push_back(&r);
  std::stable_sort(pieces.begin(), pieces.end(), [](const Row* a, const Row* b) { return a->seconds > b->seconds; });
  if (pieces.size() > static_cast<size_t>(top)) pieces.resize(static_cast<size_t>(top));
  out += fmt::format(
      "  top pieces by time (a piece is one execute call, timed as a whole: its time is not split between its "
      "ops)\n");
  out += fmt::format("  {:>10} {:>7} {:>7} {:>6}  {:<16} {:<40} {}\n", "ms", "share", "calls", "pieces", "on", "graph",
                     "ops");
  for (const Row* r : pieces)
    out +=
        fmt::format("  {:>10.3f} {:>6.1f}% {:>7} {:>6}  {:<16} {:<40} {}\n", 1e3 * r->seconds, share(r->seconds, wall),
                    r->calls, r->steps.size(), place(r->key.where, r->key.device), r->key.graph, r->key.ops);
  return out;
}

}  // namespace kiln::graph
