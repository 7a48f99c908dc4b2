// Cross-process lock files for the compile cache. They only keep two
// processes from compiling the same key at the same time; nothing depends
// on them for correctness (entries are published atomically, so a lost or
// stolen lock costs at most a duplicate compilation).
//
// A lock is a file created with O_EXCL holding "host pid token". While held,
// a thread touches its mtime every second (the heartbeat). A lock is stale
// when its holder is on this host and that pid no longer exists, or when its
// heartbeat is older than stale_after (a holder on another node that died)
// or further than stale_after in the future (clock skew: it would never age).
// Waiting longer than 2 s says on stderr for what and on whom.
// A stale lock is taken over by renaming it aside, so of several processes
// that find it stale only one wins.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace kiln::compiler_cache {

struct LockPolicy {
  std::chrono::milliseconds max_wait{std::chrono::minutes(10)};
  std::chrono::milliseconds stale_after{std::chrono::seconds(60)};
  std::chrono::milliseconds heartbeat{std::chrono::seconds(1)};
};

struct LockHolder {
  std::string host;
  long pid = 0;
  std::string token;
  double heartbeat_age_s = 0;  // seconds since the last heartbeat
};

// Who holds the lock at `path`, if anyone (and the file is readable).
std::optional<LockHolder> read_lock(const std::string& path);
bool lock_is_stale(const LockHolder& holder, const LockPolicy& policy);
// "pid 123 on node7, last heartbeat 0.4 s ago", for messages.
std::string describe_holder(const LockHolder& holder);
std::string this_host();

class Lock {
 public:
  // One attempt (taking over a stale lock); nullptr if a live process holds
  // it or the file cannot be created (then *unavailable is set: waiting
  // would not help).
  static std::unique_ptr<Lock> try_acquire(const std::string& path, const LockPolicy& policy,
                                           bool* unavailable = nullptr);
  // Retries until acquired, until `stop_waiting()` says the work is done
  // elsewhere (e.g. the entry appeared), or until policy.max_wait ran out:
  // then nullptr, and the caller goes on without the lock.
  static std::unique_ptr<Lock> acquire(const std::string& path, const LockPolicy& policy,
                                       const std::function<bool()>& stop_waiting);
  ~Lock();
  Lock(const Lock&) = delete;
  Lock& operator=(const Lock&) = delete;

 private:
  struct Heartbeat;
  Lock(std::string path, std::string token, const LockPolicy& policy);
  std::string path_;
  std::string token_;
  std::unique_ptr<Heartbeat> heartbeat_;
};

}  // namespace kiln::compiler_cache
