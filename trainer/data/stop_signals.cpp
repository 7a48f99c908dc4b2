#include "trainer/data/stop_signals.h"

#include <atomic>
#include <csignal>
#include <cstdio>

namespace kiln::data {

namespace {

// A handler may only store to a lock-free atomic.
std::atomic<int> g_stop{0};
static_assert(std::atomic<int>::is_always_lock_free);

extern "C" void on_stop(int sig) { g_stop.store(sig); }

struct sigaction g_old_term, g_old_int;

}  // namespace

StopSignals::StopSignals() {
  g_stop.store(0);
  struct sigaction sa {};
  sa.sa_handler = on_stop;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;  // reads resume; the command polls between lines
  sigaction(SIGTERM, &sa, &g_old_term);
  sigaction(SIGINT, &sa, &g_old_int);
}

StopSignals::~StopSignals() {
  sigaction(SIGTERM, &g_old_term, nullptr);
  sigaction(SIGINT, &g_old_int, nullptr);
  g_stop.store(0);  // a later writer in this process must not see this command's signal
}

int stop_signal() { return g_stop.load(); }

void throw_if_stop_requested() {
  if (const int sig = g_stop.load(); sig != 0) throw StopRequested(sig);
}

const char* stop_signal_name(int sig) {
  if (sig == SIGTERM) return "SIGTERM";
  if (sig == SIGINT) return "SIGINT";
  static char other[32];
  std::snprintf(other, sizeof(other), "signal %d", sig);
  return other;
}

}  // namespace kiln::data
