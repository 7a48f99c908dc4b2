#include "trainer/checkpoint/save_lock.h"

#include <filesystem>

#include "core/error.h"
#include "core/log.h"
#include "trainer/checkpoint/checkpoint_io.h"

namespace kiln::trainer {
namespace fs = std::filesystem;

std::unique_ptr<SaveDirLock> SaveDirLock::take(const std::string& save_dir) {
  const std::string path = (fs::path(save_dir) / kSaveLockName).string();
  const compiler_cache::LockPolicy policy;  // stale after 60 s without a heartbeat
  bool unavailable = false;
  std::unique_ptr<compiler_cache::Lock> lock = compiler_cache::Lock::try_acquire(path, policy, &unavailable);
  if (!lock) {
    if (unavailable) throw Error("--save " + save_dir + ": cannot create its lock file " + path);
    const std::optional<compiler_cache::LockHolder> holder = compiler_cache::read_lock(path);
    // A kiln lock holds "host pid token"; anything else (a stray or damaged
    // file) names no holder to stop. It still blocks until it is 60 s old,
    // like a lock whose holder died before writing it.
    if (holder && (holder->host.empty() || holder->pid <= 0 || holder->token.empty()))
      throw Error(path + " is not a kiln lock file (it names no host, pid and token); remove it if no kiln run is " +
                  "saving to --save " + save_dir + " (it is taken over once 60 s old)");
    throw Error("--save " + save_dir + " is in use by another kiln run (" +
                (holder ? compiler_cache::describe_holder(*holder) : std::string("lock ") + path) +
                "), and two runs would overwrite each other's checkpoints; give this run its own --save, or stop "
                "the other run");
  }
  if (const int reaped = reap_save_temporaries(save_dir); reaped > 0)
    logger().info("--save {}: removed {} temporar{} left by an interrupted save", save_dir, reaped,
                  reaped == 1 ? "y" : "ies");
  return std::unique_ptr<SaveDirLock>(new SaveDirLock(std::move(lock)));
}

int reap_save_temporaries(const std::string& save_dir) {
  const std::string latest_prefix = std::string(".") + kLatestFileName + ".";
  int removed = 0;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(save_dir, ec)) {
    const std::string name = e.path().filename().string();
    // The names save_checkpoint and check_save_dir give their temporaries,
    // and nothing else: a user's own files in --save stay.
    const bool temporary = name.rfind(".tmp_iter_", 0) == 0 || name.rfind(latest_prefix, 0) == 0 ||
                           name.rfind(".kiln_write_probe.", 0) == 0;
    if (temporary && fs::remove_all(e.path(), ec) > 0 && !ec) ++removed;
  }
  return removed;
}

}  // namespace kiln::trainer
