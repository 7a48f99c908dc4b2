#include "trainer/data/mapping_fault.h"

#include <signal.h>

#include <mutex>

namespace kiln::data::detail {

namespace {

// The guard of the read this thread is in, if any. A SIGBUS is delivered to
// the thread that faulted, so the handler finds its own thread's guard.
thread_local FaultGuard* t_guard = nullptr;

// The SIGBUS action before ours: kiln's fatal-signal report
// (core/fatal_signal_report), which names the plugin a fault came from.
struct sigaction g_previous {};

extern "C" void on_sigbus(int sig, siginfo_t* info, void* context) {
  FaultGuard* guard = t_guard;
  if (guard == nullptr) {
    // Not a guarded read: the handler that was there before us reports it;
    // with none, the default action, which the faulting instruction
    // triggers again when the handler returns.
    if ((g_previous.sa_flags & SA_SIGINFO) != 0 && g_previous.sa_sigaction != nullptr) {
      g_previous.sa_sigaction(sig, info, context);
    } else if ((g_previous.sa_flags & SA_SIGINFO) == 0 && g_previous.sa_handler != SIG_DFL &&
               g_previous.sa_handler != SIG_IGN) {
      g_previous.sa_handler(sig);
    }
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
    sigaction(SIGBUS, &sa, &g_previous);
  });
  t_guard = guard;
}

void disarm() { t_guard = nullptr; }

}  // namespace kiln::data::detail
