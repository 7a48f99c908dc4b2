// One writer per --save directory. Two runs saving into the same directory
// would overwrite each other's checkpoints and `latest` file, so a run holds
// <save>/.kiln-save.lock for its whole life (the compile cache's lock files:
// host, pid and a heartbeat, taken over when the holder is dead or silent).
// Holding it also makes this run the only writer, so the temporaries of
// writers killed mid-save (.tmp_iter_*, .latest_checkpointed_iteration.txt.*)
// can be removed safely when it is taken.
#pragma once

#include <memory>
#include <string>

#include "compiler_cache/lock.h"

namespace kiln::trainer {

inline constexpr const char* kSaveLockName = ".kiln-save.lock";

class SaveDirLock {
 public:
  // Takes the lock of save_dir (which must exist) and reaps dead writers'
  // temporaries; throws a one-line kiln::Error naming the live holder.
  static std::unique_ptr<SaveDirLock> take(const std::string& save_dir);

 private:
  explicit SaveDirLock(std::unique_ptr<compiler_cache::Lock> lock) : lock_(std::move(lock)) {}
  std::unique_ptr<compiler_cache::Lock> lock_;
};

// Removes the temporaries an interrupted save leaves in save_dir; returns
// how many it removed. Only safe while holding the directory's lock.
int reap_save_temporaries(const std::string& save_dir);

}  // namespace kiln::trainer
