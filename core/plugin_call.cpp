#include "core/plugin_call.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <mutex>
#include <string>

#include "core/backend.h"

namespace kiln {
namespace {

// The calling thread's own call. Trivial types only: a signal handler may
// read them (no lazy initialisation behind a thread_local of a class type).
thread_local const char* t_backend = nullptr;
thread_local const char* t_path = nullptr;
thread_local const char* t_function = nullptr;

// The latest call any thread entered, published as a pointer to a slot that
// was filled in before it, so a handler never sees half of one record. The
// ring is large enough that a slot is not reused while a handler reads it
// unless dozens of calls start in that instant. The fields are atomic
// because a slot is reused every 64 calls, perhaps by another thread;
// lock-free, so a signal handler may read them.
struct Slot {
  std::atomic<const char*> backend{nullptr};
  std::atomic<const char*> path{nullptr};
  std::atomic<const char*> function{nullptr};
};
std::array<Slot, 64> g_slots;
std::atomic<unsigned> g_next_slot{0};
std::atomic<const Slot*> g_latest{nullptr};
std::atomic<int> g_in_flight{0};
static_assert(std::atomic<const char*>::is_always_lock_free && std::atomic<const Slot*>::is_always_lock_free &&
              std::atomic<int>::is_always_lock_free);

// The names and paths the records point to: copies that live as long as
// the process, so a handler never reads a string a destroyed Plugin owned.
struct Identity {
  std::array<char, 64> name;
  std::array<char, 1024> path;
};
std::array<Identity, 32> g_identities{};
std::atomic<size_t> g_identity_count{0};
std::mutex g_identity_mutex;
const Identity g_too_many{{"(a plugin)"}, {"(more plugins than kiln records)"}};

// A long name or path is kept cut, and matched cut.
bool same_prefix(const std::array<char, 64>& a, const std::string& b) {
  return std::strncmp(a.data(), b.c_str(), a.size() - 1) == 0;
}
bool same_prefix(const std::array<char, 1024>& a, const std::string& b) {
  return std::strncmp(a.data(), b.c_str(), a.size() - 1) == 0;
}
template <size_t N>
void copy_cut(std::array<char, N>& to, const std::string& from) {
  const size_t n = std::min(from.size(), N - 1);
  std::memcpy(to.data(), from.data(), n);
  to[n] = '\0';
}

const Identity& identity_of(const Plugin& plugin) {
  auto find = [&](size_t count) -> const Identity* {
    for (size_t i = 0; i < count; ++i)
      if (same_prefix(g_identities[i].name, plugin.name) && same_prefix(g_identities[i].path, plugin.path))
        return &g_identities[i];
    return nullptr;
  };
  if (const Identity* known = find(g_identity_count.load(std::memory_order_acquire))) return *known;
  const std::lock_guard<std::mutex> lock(g_identity_mutex);
  const size_t count = g_identity_count.load(std::memory_order_acquire);
  if (const Identity* known = find(count)) return *known;
  if (count == g_identities.size()) return g_too_many;
  copy_cut(g_identities[count].name, plugin.name);
  copy_cut(g_identities[count].path, plugin.path);
  g_identity_count.store(count + 1, std::memory_order_release);
  return g_identities[count];
}

}  // namespace

PluginCall::PluginCall(const Plugin& plugin, const char* function) noexcept
    : previous_backend_(t_backend), previous_path_(t_path), previous_function_(t_function) {
  const Identity& identity = identity_of(plugin);
  t_backend = identity.name.data();
  t_path = identity.path.data();
  t_function = function;
  Slot& slot = g_slots[g_next_slot.fetch_add(1, std::memory_order_relaxed) % g_slots.size()];
  slot.backend.store(t_backend, std::memory_order_relaxed);
  slot.path.store(t_path, std::memory_order_relaxed);
  slot.function.store(function, std::memory_order_relaxed);
  g_latest.store(&slot, std::memory_order_release);
  g_in_flight.fetch_add(1, std::memory_order_acq_rel);
}

PluginCall::~PluginCall() {
  g_in_flight.fetch_sub(1, std::memory_order_acq_rel);
  t_backend = previous_backend_;
  t_path = previous_path_;
  t_function = previous_function_;
}

PluginCallInfo plugin_call_for_signal() noexcept {
  PluginCallInfo info;
  if (t_function != nullptr) {
    info.backend = t_backend;
    info.path = t_path;
    info.function = t_function;
    info.in_progress = true;
    return info;
  }
  const Slot* latest = g_latest.load(std::memory_order_acquire);
  if (latest == nullptr) return info;
  info.backend = latest->backend.load(std::memory_order_relaxed);
  info.path = latest->path.load(std::memory_order_relaxed);
  info.function = latest->function.load(std::memory_order_relaxed);
  info.in_progress = g_in_flight.load(std::memory_order_acquire) > 0;
  return info;
}

}  // namespace kiln
