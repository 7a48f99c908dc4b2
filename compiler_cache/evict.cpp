#include "compiler_cache/evict.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "compiler_cache/lock.h"

namespace kiln::compiler_cache {
namespace {

int64_t nanoseconds(const struct timespec& t) { return static_cast<int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec; }

// "<dir>/<key>.entry" -> "<dir>/<key>.lock" (store.h's layout).
std::string lock_path_of(const std::string& entry_path) {
  return entry_path.substr(0, entry_path.size() - std::string(".entry").size()) + ".lock";
}

}  // namespace

int64_t mtime_ns(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? nanoseconds(st.st_mtim) : -1;
}

Eviction evict_entry(const std::string& entry_path, int64_t listed_mtime_ns) {
  if (std::optional<LockHolder> holder = read_lock(lock_path_of(entry_path)))
    if (!lock_is_stale(*holder, LockPolicy{})) return Eviction::InUse;
  // Opened only to flock it; O_NONBLOCK so a FIFO in place of an entry cannot block.
  const int fd = ::open(entry_path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);  // not an input: flock
  if (fd < 0) return errno == ENOENT ? Eviction::Gone : Eviction::InUse;
  Eviction result = Eviction::InUse;
  int unlink_errno = 0;
  if (::flock(fd, LOCK_EX | LOCK_NB) == 0) {
    struct stat held {
    }, now{};
    const bool same_file = ::fstat(fd, &held) == 0 && ::stat(entry_path.c_str(), &now) == 0 &&
                           held.st_ino == now.st_ino && held.st_dev == now.st_dev;
    if (!same_file || nanoseconds(held.st_mtim) != listed_mtime_ns)
      result = Eviction::Changed;
    else if (::unlink(entry_path.c_str()) == 0)
      result = Eviction::Removed;
    else if (errno == ENOENT)
      result = Eviction::Gone;
    else {
      result = Eviction::Failed;
      unlink_errno = errno;
    }
  }
  ::close(fd);                                           // releases the flock
  if (result == Eviction::Failed) errno = unlink_errno;  // close may have changed it
  return result;
}

}  // namespace kiln::compiler_cache
