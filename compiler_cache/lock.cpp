#include "compiler_cache/lock.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>

#include "core/log.h"
#include "core/regular_file.h"

namespace kiln::compiler_cache {

std::string this_host() {
  char name[256] = {};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "unknown-host";
  return name;
}

namespace {

std::string random_token() {
  std::random_device rd;
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%08x%08x", rd(), rd());
  return buf;
}

double seconds_since_mtime(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return 0;
  struct timespec now {};
  ::clock_gettime(CLOCK_REALTIME, &now);
  return static_cast<double>(now.tv_sec - st.st_mtim.tv_sec) +
         1e-9 * static_cast<double>(now.tv_nsec - st.st_mtim.tv_nsec);
}

bool pid_alive(long pid) {
  if (pid <= 0) return false;
  return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
}

}  // namespace

std::optional<LockHolder> read_lock(const std::string& path) {
  // A lock file that is no regular file (a FIFO would block) or too big for
  // "host pid token" reads as absent, as an unreadable one always has.
  RegularFile file = open_regular_file(path, kMaxPointerFileBytes);
  if (file.fd < 0) return std::nullopt;
  const InputFd fd(file.fd, file.size);
  std::string text(fd.size(), '\0');
  const ssize_t got = ::read(fd.fd(), text.data(), text.size());
  text.resize(got > 0 ? static_cast<size_t>(got) : 0);
  std::istringstream in(text);
  LockHolder h;
  in >> h.host >> h.pid >> h.token;
  h.heartbeat_age_s = seconds_since_mtime(path);
  return h;
}

bool lock_is_stale(const LockHolder& h, const LockPolicy& policy) {
  if (h.host == this_host() && !pid_alive(h.pid)) return true;
  // A half-written lock (holder died between create and write) has no pid:
  // it goes stale by age like any other. A heartbeat further in the future
  // than the stale age is implausible (clock skew, a copied file): it would
  // never age, so it counts as stale too.
  const double stale_s = static_cast<double>(policy.stale_after.count()) / 1000.0;
  return h.heartbeat_age_s > stale_s || h.heartbeat_age_s < -stale_s;
}

std::string describe_holder(const LockHolder& h) {
  char age[32];
  std::snprintf(age, sizeof age, "%.1f", h.heartbeat_age_s);
  return "pid " + std::to_string(h.pid) + " on " + h.host + ", last heartbeat " + age + " s ago";
}

// Touches the lock file's mtime until stopped.
struct Lock::Heartbeat {
  std::mutex mutex;
  std::condition_variable wake;
  bool stop = false;
  std::thread thread;

  Heartbeat(const std::string& path, std::chrono::milliseconds period) {
    thread = std::thread([this, path, period] {
      std::unique_lock<std::mutex> lock(mutex);
      while (!wake.wait_for(lock, period, [this] { return stop; })) ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);
    });
  }
  ~Heartbeat() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      stop = true;
    }
    wake.notify_all();
    thread.join();
  }
};

Lock::Lock(std::string path, std::string token, const LockPolicy& policy)
    : path_(std::move(path)), token_(std::move(token)) {
  heartbeat_ = std::make_unique<Heartbeat>(path_, policy.heartbeat);
}

Lock::~Lock() {
  heartbeat_.reset();
  // Remove it only if it is still ours (it may have been taken over after a
  // long stall).
  std::optional<LockHolder> h = read_lock(path_);
  if (h && h->token == token_) ::unlink(path_.c_str());
}

std::unique_ptr<Lock> Lock::try_acquire(const std::string& path, const LockPolicy& policy, bool* unavailable) {
  if (unavailable) *unavailable = false;
  for (int attempt = 0; attempt < 2; ++attempt) {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd >= 0) {
      std::string token = random_token();
      std::string text = this_host() + " " + std::to_string(::getpid()) + " " + token + "\n";
      bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
      ::close(fd);
      if (!ok) {
        ::unlink(path.c_str());
        if (unavailable) *unavailable = true;
        return nullptr;
      }
      return std::unique_ptr<Lock>(new Lock(path, token, policy));
    }
    if (errno != EEXIST) {  // unwritable directory: go on unlocked
      if (unavailable) *unavailable = true;
      return nullptr;
    }
    std::optional<LockHolder> holder = read_lock(path);
    if (!holder) continue;  // released between open and read: try again
    if (!lock_is_stale(*holder, policy)) return nullptr;
    // Take it over: only one of several processes can rename it aside.
    const std::string aside = path + ".stale." + std::to_string(::getpid()) + "." + random_token();
    if (::rename(path.c_str(), aside.c_str()) != 0) continue;
    std::optional<LockHolder> moved = read_lock(aside);
    if (moved && moved->token != holder->token) {
      // A live holder replaced the stale lock between the check and the
      // rename: put its lock back (link fails if yet another exists).
      if (::link(aside.c_str(), path.c_str()) != 0) { /* someone holds it already */
      }
      ::unlink(aside.c_str());
      return nullptr;
    }
    ::unlink(aside.c_str());
  }
  return nullptr;
}

std::unique_ptr<Lock> Lock::acquire(const std::string& path, const LockPolicy& policy,
                                    const std::function<bool()>& stop_waiting) {
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + policy.max_wait;
  auto pause = std::chrono::milliseconds(20);
  bool told = false;
  for (;;) {
    bool unavailable = false;
    if (std::unique_ptr<Lock> lock = try_acquire(path, policy, &unavailable)) return lock;
    if (unavailable) return nullptr;
    if (stop_waiting && stop_waiting()) return nullptr;
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) {
      logger().warn("gave up waiting for lock {} after {} s; going on without it", path,
                    std::chrono::duration_cast<std::chrono::seconds>(now - start).count());
      return nullptr;
    }
    // Waiting silently looks like a hang: say for what, on whom, how long.
    if (!told && now - start >= std::chrono::seconds(2)) {
      told = true;
      if (std::optional<LockHolder> h = read_lock(path))
        logger().warn("waiting for lock {}, held by {}; at most {} s more, or until it is {} s without a heartbeat",
                      path, describe_holder(*h),
                      std::chrono::duration_cast<std::chrono::seconds>(deadline - now).count(),
                      std::chrono::duration_cast<std::chrono::seconds>(policy.stale_after).count());
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(500));
  }
}

}  // namespace kiln::compiler_cache
