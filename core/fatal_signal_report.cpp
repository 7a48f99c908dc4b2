#include "core/fatal_signal_report.h"

#include <signal.h>
#include <unistd.h>

#include <array>
#include <mutex>

#include "core/plugin_call.h"

namespace kiln {
namespace {

constexpr std::array<int, 5> kFatalSignals = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
std::array<struct sigaction, kFatalSignals.size()> g_previous{};

// Enough for a stack overflow's handler: it formats into a static buffer.
alignas(16) std::array<char, 64 * 1024> g_alt_stack{};

const char* signal_abbrev(int sig) noexcept {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGILL: return "SIGILL";
    case SIGFPE: return "SIGFPE";
    case SIGABRT: return "SIGABRT";
    default: return "signal";
  }
}

// Appends to a fixed buffer; what does not fit is cut.
struct LineWriter {
  char* out;
  unsigned long size;
  unsigned long used = 0;
  void add(const char* s) noexcept {
    for (; s != nullptr && *s != '\0' && used < size; ++s) out[used++] = *s;
  }
};

extern "C" void on_fatal_signal(int sig, siginfo_t* info, void* context) {
  // A handler that was there first (the SIGBUS guard of mapped reads) may
  // own this fault: it jumps out and never returns here.
  for (size_t i = 0; i < kFatalSignals.size(); ++i) {
    if (kFatalSignals[i] != sig) continue;
    const struct sigaction& prev = g_previous[i];
    if ((prev.sa_flags & SA_SIGINFO) != 0 && prev.sa_sigaction != nullptr)
      prev.sa_sigaction(sig, info, context);
    else if ((prev.sa_flags & SA_SIGINFO) == 0 && prev.sa_handler != SIG_DFL && prev.sa_handler != SIG_IGN)
      prev.sa_handler(sig);
  }
  static std::array<char, 2048> line{};
  const unsigned long n = format_fatal_signal_line(sig, line.data(), line.size());
  (void)!::write(STDERR_FILENO, line.data(), n);
  // The default action, delivered when this handler returns (the signal is
  // blocked while it runs): the process ends as the signal would have ended it.
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

}  // namespace

unsigned long format_fatal_signal_line(int sig, char* out, unsigned long size) noexcept {
  LineWriter w{out, size};
  const PluginCallInfo call = plugin_call_for_signal();
  w.add("kiln: fatal ");
  w.add(signal_abbrev(sig));
  if (call.backend == nullptr) {
    w.add(" outside any plugin call (no plugin was called yet); this is a kiln bug: please report it\n");
  } else if (call.in_progress) {
    w.add(" in plugin '");
    w.add(call.backend);
    w.add("' (");
    w.add(call.path);
    w.add(") during ");
    w.add(call.function);
    w.add("; the plugin crashed: run 'kiln check-backend ");
    w.add(call.path);
    w.add("' to find the op, or train with --backend cpu\n");
  } else {
    w.add(" outside any plugin call (the last was '");
    w.add(call.backend);
    w.add("' ");
    w.add(call.function);
    w.add(", from ");
    w.add(call.path);
    w.add("); if it is the plugin's own thread, run 'kiln check-backend ");
    w.add(call.path);
    w.add("', else please report a kiln bug\n");
  }
  if (w.used == size && size > 0) out[size - 1] = '\n';
  return w.used;
}

void install_fatal_signal_report() {
  static std::once_flag installed;
  std::call_once(installed, [] {
    stack_t stack{};
    stack.ss_sp = g_alt_stack.data();
    stack.ss_size = g_alt_stack.size();
    ::sigaltstack(&stack, nullptr);
    struct sigaction sa {};
    sa.sa_sigaction = on_fatal_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    for (size_t i = 0; i < kFatalSignals.size(); ++i) ::sigaction(kFatalSignals[i], &sa, &g_previous[i]);
  });
}

}  // namespace kiln
