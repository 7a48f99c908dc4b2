#include "core/plugin_load_guard.h"

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

namespace kiln {
namespace {

// Set only while a plugin's load-time code runs. The messages are formatted
// before it runs: the handlers below may only call async-signal-safe write().
volatile std::sig_atomic_t g_loading = 0;
std::array<char, 4096> g_exit_message{};
std::array<char, 4096> g_crash_message{};
size_t g_exit_message_size = 0;
size_t g_crash_message_size = 0;
bool g_in_child = false;
volatile std::sig_atomic_t g_reported_status = 1;  // set_guarded_load_exit_status

constexpr int kChildLoaded = 75;      // the child's status when the load returned
constexpr int kChildCalledExit = 76;  // the child's status when the plugin called exit()

constexpr std::array<int, 5> kCrashSignals = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};

size_t set_message(std::array<char, 4096>& buffer, const std::string& text) {
  const size_t n = std::min(text.size(), buffer.size());
  std::memcpy(buffer.data(), text.data(), n);
  return n;
}

// Registered once with atexit(): exit() from a plugin constructor runs it
// while g_loading is set. At any other exit it does nothing.
void on_exit_during_load() {
  if (g_loading == 0) return;
  if (g_in_child) ::_exit(kChildCalledExit);
  (void)!::write(STDERR_FILENO, g_exit_message.data(), g_exit_message_size);
  ::_exit(g_reported_status);
}

extern "C" void on_crash_during_load(int /*sig*/) {
  (void)!::write(STDERR_FILENO, g_crash_message.data(), g_crash_message_size);
  ::_exit(g_reported_status);
}

void register_exit_hook_once() {
  static const bool registered = std::atexit(on_exit_during_load) == 0;
  (void)registered;
}

std::string dir_of(const std::string& path) {
  std::string dir = std::filesystem::path(path).parent_path().string();
  return dir.empty() ? "." : dir;
}

}  // namespace

void set_guarded_load_exit_status(int status) { g_reported_status = status; }

void run_guarded_load(const std::string& path, const std::function<void()>& load) {
  register_exit_hook_once();
  g_exit_message_size = set_message(
      g_exit_message,
      fmt::format("kiln: error: plugin {} called exit() while loading; remove it from {}\n", path, dir_of(path)));
  g_crash_message_size =
      set_message(g_crash_message,
                  fmt::format("kiln: error: plugin {} crashed while loading; remove it from {}\n", path, dir_of(path)));

  struct sigaction crash {};
  crash.sa_handler = on_crash_during_load;
  sigemptyset(&crash.sa_mask);
  crash.sa_flags = SA_RESETHAND;
  std::array<struct sigaction, kCrashSignals.size()> previous{};
  for (size_t i = 0; i < kCrashSignals.size(); ++i) sigaction(kCrashSignals[i], &crash, &previous[i]);

  g_loading = 1;
  load();
  g_loading = 0;

  for (size_t i = 0; i < kCrashSignals.size(); ++i) sigaction(kCrashSignals[i], &previous[i], nullptr);
}

std::string probe_load_in_child(const std::function<void()>& load) {
  register_exit_hook_once();
  std::fflush(nullptr);  // the child must not flush this process's buffered output again
  const pid_t pid = ::fork();
  if (pid < 0) return {};  // cannot probe; the in-process guard still reports a bad plugin
  if (pid == 0) {
    g_in_child = true;
    g_loading = 1;
    load();
    ::_exit(kChildLoaded);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return {};
  }
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    return fmt::format("crashed with signal {} ({}) while loading", sig, strsignal(sig));
  }
  if (WIFEXITED(status)) {
    const int code = WEXITSTATUS(status);
    if (code == kChildLoaded) return {};
    if (code == kChildCalledExit) return "called exit() while loading";
    return fmt::format("ended the process with status {} while loading", code);
  }
  return {};
}

}  // namespace kiln
