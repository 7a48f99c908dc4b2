#include "graph/conformance/isolated.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "core/plugin_call.h"
#include "core/plugin_load_guard.h"

namespace kiln::conformance {
namespace {

using Clock = std::chrono::steady_clock;

// Messages from the child, each [type u8][payload size u32][payload].
enum class Message : uint8_t {
  OpenFailed = 'E',  // payload: the error text
  Started = 'S',     // payload: unit index
  Finished = 'F',    // payload: unit index, then its results
  Done = 'D',        // every unit ran
};

class Writer {
 public:
  void u8(uint8_t v) { bytes_.push_back(v); }
  void u32(uint32_t v) { raw(&v, sizeof v); }
  void f64(double v) { raw(&v, sizeof v); }
  void str(const std::string& s) {
    u32(static_cast<uint32_t>(s.size()));
    raw(s.data(), s.size());
  }
  const std::vector<uint8_t>& bytes() const { return bytes_; }

 private:
  void raw(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    bytes_.insert(bytes_.end(), b, b + n);
  }
  std::vector<uint8_t> bytes_;
};

class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : p_(data), end_(data + size) {}
  uint8_t u8() { return take<uint8_t>(); }
  uint32_t u32() { return take<uint32_t>(); }
  double f64() { return take<double>(); }
  std::string str() {
    const uint32_t n = u32();
    need(n);
    std::string s(reinterpret_cast<const char*>(p_), n);
    p_ += n;
    return s;
  }

 private:
  template <class T>
  T take() {
    need(sizeof(T));
    T v;
    std::memcpy(&v, p_, sizeof(T));
    p_ += sizeof(T);
    return v;
  }
  void need(size_t n) const {
    if (static_cast<size_t>(end_ - p_) < n) throw Error("check-backend: a case process sent a malformed message");
  }
  const uint8_t* p_;
  const uint8_t* end_;
};

// The child writes whole messages; a pipe write may still be split.
void send(int fd, Message type, const Writer& payload) {
  Writer framed;
  framed.u8(static_cast<uint8_t>(type));
  framed.u32(static_cast<uint32_t>(payload.bytes().size()));
  std::vector<uint8_t> all = framed.bytes();
  all.insert(all.end(), payload.bytes().begin(), payload.bytes().end());
  for (size_t done = 0; done < all.size();) {
    const ssize_t n = ::write(fd, all.data() + done, all.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) ::_exit(1);  // the parent is gone
    done += static_cast<size_t>(n);
  }
}

void put_results(Writer& w, const std::vector<CaseResult>& results) {
  w.u32(static_cast<uint32_t>(results.size()));
  for (const CaseResult& r : results) {
    w.u8(static_cast<uint8_t>(r.status));
    w.f64(r.nmse);
    w.f64(r.seconds);
    w.str(r.detail);
    w.u32(static_cast<uint32_t>(r.outputs.size()));
    for (const auto& [name, nmse] : r.outputs) {
      w.str(name);
      w.f64(nmse);
    }
  }
}

std::vector<CaseResult> get_results(Reader& r) {
  std::vector<CaseResult> results(r.u32());
  for (CaseResult& c : results) {
    const uint8_t status = r.u8();
    if (status > static_cast<uint8_t>(Status::Fallback))
      throw Error("check-backend: a case process sent a malformed message");
    c.status = static_cast<Status>(status);
    c.nmse = r.f64();
    c.seconds = r.f64();
    c.detail = r.str();
    const uint32_t outputs = r.u32();
    for (uint32_t k = 0; k < outputs; ++k) {
      std::string name = r.str();
      c.outputs.emplace_back(std::move(name), r.f64());
    }
  }
  return results;
}

// In the child: a fatal signal writes the plugin function that was running
// to this pipe (for the parent's report), then ends the child as the signal
// would have.
int g_crash_fd = -1;
// The child's status when the plugin load guard ended it, its line printed.
constexpr int kChildLoadReported = 74;
constexpr std::array<int, 5> kFatalSignals = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};

extern "C" void on_child_fatal_signal(int sig) {
  const PluginCallInfo call = plugin_call_for_signal();
  if (call.in_progress && call.function != nullptr)
    (void)!::write(g_crash_fd, call.function, std::strlen(call.function));
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

[[noreturn]] void child_main(const std::vector<Unit>& units, size_t first_unit, bool first_child,
                             const Options& options, const Isolation& isolation, int result_fd, int crash_fd) {
  // Dozens of crashing cases would otherwise each write a core file.
  const struct rlimit no_core {};
  ::setrlimit(RLIMIT_CORE, &no_core);
  g_crash_fd = crash_fd;
  for (int sig : kFatalSignals) ::signal(sig, on_child_fatal_signal);
  set_guarded_load_exit_status(kChildLoadReported);
  std::unique_ptr<Device> device;
  try {
    device = isolation.open();
  } catch (const std::exception& e) {
    Writer w;
    w.str(e.what());
    send(result_fd, Message::OpenFailed, w);
    ::_exit(0);
  }
  if (first_child && isolation.on_open) isolation.on_open(*device);
  std::fflush(nullptr);
  for (size_t i = first_unit; i < units.size(); ++i) {
    Writer started;
    started.u32(static_cast<uint32_t>(i));
    send(result_fd, Message::Started, started);
    std::vector<CaseResult> results;
    try {
      results = run_unit(*device, units[i], options);
    } catch (const std::exception& e) {  // not a kiln::Error: run_unit lets it through
      results.assign(units[i].cases.size(), CaseResult{});
      for (CaseResult& r : results) {
        r.status = Status::Fail;
        r.detail = e.what();
      }
    }
    Writer finished;
    finished.u32(static_cast<uint32_t>(i));
    put_results(finished, results);
    send(result_fd, Message::Finished, finished);
  }
  send(result_fd, Message::Done, Writer{});
  std::fflush(nullptr);
  ::_exit(0);  // no destructors or atexit handlers of the parent's state
}

std::string signal_name(int sig) {
  const char* abbrev = sigabbrev_np(sig);
  return abbrev ? fmt::format("SIG{} ({})", abbrev, strsignal(sig)) : fmt::format("signal {}", sig);
}

// One child's life as the parent sees it.
struct ChildEnd {
  bool done = false;      // it sent Done
  long in_progress = -1;  // the unit it had started and not finished
  bool timed_out = false;
  int status = 0;          // from waitpid
  std::string function;    // the plugin function a fatal signal hit
  std::string open_error;  // the device did not open
};

class ChildRun {
 public:
  ChildRun(const std::vector<Unit>& units, size_t first_unit, bool first_child, const Options& options,
           const Isolation& isolation, const CaseDone& done)
      : units_(units), done_(done), timeout_s_(isolation.case_timeout_s) {
    int results[2], crash[2];
    if (::pipe2(results, O_CLOEXEC) != 0 || ::pipe2(crash, O_CLOEXEC) != 0)
      throw Error(fmt::format("check-backend: cannot create a pipe: {}", std::strerror(errno)));
    std::fflush(nullptr);  // the child must not write this process's buffered output again
    pid_ = ::fork();
    if (pid_ < 0) throw Error(fmt::format("check-backend: cannot fork a case process: {}", std::strerror(errno)));
    if (pid_ == 0) {
      ::close(results[0]);
      ::close(crash[0]);
      child_main(units, first_unit, first_child, options, isolation, results[1], crash[1]);
    }
    ::close(results[1]);
    ::close(crash[1]);
    result_fd_ = results[0];
    crash_fd_ = crash[0];
  }
  ~ChildRun() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      int status = 0;
      while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
      }
    }
    if (result_fd_ >= 0) ::close(result_fd_);
    if (crash_fd_ >= 0) ::close(crash_fd_);
  }
  ChildRun(const ChildRun&) = delete;
  ChildRun& operator=(const ChildRun&) = delete;

  // Reads until the child ends (or is killed for a timeout); delivers every
  // finished unit's results on the way.
  ChildEnd wait() {
    ChildEnd end;
    std::vector<uint8_t> buffer;
    // Opening the device gets one case's time.
    auto deadline = limit(1);
    for (;;) {
      int timeout_ms = -1;
      if (deadline) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*deadline - Clock::now()).count();
        timeout_ms = static_cast<int>(std::max<long long>(0, std::min<long long>(left, 1 << 30)));
      }
      pollfd pfd{result_fd_, POLLIN, 0};
      const int ready = ::poll(&pfd, 1, timeout_ms);
      if (ready < 0 && errno == EINTR) continue;
      if (ready == 0) {
        end.timed_out = true;
        ::kill(pid_, SIGKILL);
        break;
      }
      std::array<uint8_t, 65536> chunk{};
      const ssize_t n = ::read(result_fd_, chunk.data(), chunk.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;  // the child ended
      buffer.insert(buffer.end(), chunk.begin(), chunk.begin() + n);
      size_t used = 0;
      while (buffer.size() - used >= 5) {
        uint32_t size = 0;
        std::memcpy(&size, buffer.data() + used + 1, sizeof size);
        if (buffer.size() - used - 5 < size) break;
        const auto type = static_cast<Message>(buffer[used]);
        Reader r(buffer.data() + used + 5, size);
        used += 5 + size;
        switch (type) {
          case Message::OpenFailed: end.open_error = r.str(); break;
          case Message::Started:
            end.in_progress = r.u32();
            deadline = limit(units_.at(static_cast<size_t>(end.in_progress)).cases.size());
            break;
          case Message::Finished: {
            const size_t i = r.u32();
            std::vector<CaseResult> results = get_results(r);
            const Unit& unit = units_.at(i);
            if (results.size() != unit.cases.size())
              throw Error("check-backend: a case process sent a malformed message");
            for (size_t k = 0; k < results.size(); ++k) done_(unit.cases[k], std::move(results[k]));
            end.in_progress = -1;
            deadline = limit(1);
            break;
          }
          case Message::Done: end.done = true; break;
          default: throw Error("check-backend: a case process sent a malformed message");
        }
      }
      buffer.erase(buffer.begin(), buffer.begin() + static_cast<long>(used));
    }
    while (::waitpid(pid_, &end.status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
    std::array<char, 256> function{};
    const ssize_t n = ::read(crash_fd_, function.data(), function.size() - 1);
    if (n > 0) end.function.assign(function.data(), static_cast<size_t>(n));
    return end;
  }

 private:
  std::optional<Clock::time_point> limit(size_t cases) const {
    if (timeout_s_ <= 0) return std::nullopt;
    const auto seconds = std::chrono::duration<double>(timeout_s_ * static_cast<double>(cases));
    return Clock::now() + std::chrono::duration_cast<Clock::duration>(seconds);
  }

  const std::vector<Unit>& units_;
  const CaseDone& done_;
  double timeout_s_;
  pid_t pid_ = -1;
  int result_fd_ = -1, crash_fd_ = -1;
};

// Why a child that was running a case ended: the case's failure detail.
std::string why_child_ended(const ChildEnd& end, double timeout_s) {
  const std::string during = end.function.empty() ? "" : " during " + end.function;
  if (end.timed_out)
    return fmt::format(
        "no result within {} s: the case process was killed (a hang, or a slow case: raise --case-timeout)", timeout_s);
  if (WIFSIGNALED(end.status))
    return fmt::format("crashed the case process with {}{}", signal_name(WTERMSIG(end.status)), during);
  return fmt::format("ended the case process with exit status {} (the plugin called exit()?)",
                     WIFEXITED(end.status) ? WEXITSTATUS(end.status) : -1);
}

void run_units_in_children(std::vector<Unit> units, const Options& options, const Isolation& isolation,
                           const CaseDone& done) {
  size_t next = 0;
  bool first_child = true;
  while (next < units.size()) {
    ChildEnd end;
    {
      ChildRun child(units, next, first_child, options, isolation, done);
      first_child = false;
      end = child.wait();
    }
    if (!end.open_error.empty()) throw Error(end.open_error);
    if (end.done) return;
    if (end.in_progress < 0) {
      // A plugin that crashed or called exit() while loading: the guard
      // printed the one line naming it and the fix; a second would blame
      // exit() for a crash.
      if (!end.timed_out && WIFEXITED(end.status) && WEXITSTATUS(end.status) == kChildLoadReported)
        throw ReportedError("check-backend: the plugin ended the process opening the device while loading");
      // Ended between cases or before the first: opening the device.
      throw Error(fmt::format("check-backend: the process opening the device {}",
                              why_child_ended(end, isolation.case_timeout_s)));
    }
    const auto culprit = static_cast<size_t>(end.in_progress);
    Unit& unit = units[culprit];
    if (unit.cases.size() > 1) {
      // Rerun the merged unit's cases one by one to find the culprit.
      std::vector<Unit> singles;
      for (const Case* c : unit.cases) singles.push_back(Unit{{c}, true});
      units.erase(units.begin() + static_cast<long>(culprit));
      units.insert(units.begin() + static_cast<long>(culprit), singles.begin(), singles.end());
      next = culprit;
      continue;
    }
    CaseResult r;
    r.c = unit.cases[0];
    r.status = Status::Fail;
    r.detail = why_child_ended(end, isolation.case_timeout_s);
    done(unit.cases[0], std::move(r));
    next = culprit + 1;
  }
  // Every unit is done except when none was selected: nothing to run.
}

}  // namespace

Report run_isolated(const Suite& suite, const Options& options, const Isolation& isolation) {
  return run_units(suite, options, [&](const std::vector<Unit>& units, const CaseDone& done) {
    run_units_in_children(units, options, isolation, done);
  });
}

}  // namespace kiln::conformance
