#include "trainer/data/mapping_fault.h"

#include <signal.h>

#include <mutex>

namespace kiln::data::detail {

namespace {

// The guard of the read this thread is in, if any. A SIGBUS is delivered to
// the thread that faulted, so the handler finds its own thread's guard.
thread_local FaultGuard* t_guard = nullptr;

extern "C" void on_sigbus(int /*sig*/, siginfo_t* info, void* /*context*/) {
  FaultGuard* guard = t_guard;
  if (guard == nullptr) {
    // Not a guarded read: fall back to the default action, which the
    // faulting instruction triggers again when the handler returns.
    signal(SIGBUS, SIG_DFL);
    return;
  }
  guard->address = info->si_addr;
  siglongjmp(guard->env, 1);
}

}  // namespace

void arm(FaultGuard* guard) {
  static std::once_flag installed;
  std::call_once(installed, [] {
    struct sigaction sa {};
    sa.sa_sigaction = on_sigbus;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGBUS, &sa, nullptr);
  });
  t_guard = guard;
}

void disarm() { t_guard = nullptr; }

}  // namespace kiln::data::detail
