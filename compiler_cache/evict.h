// Removing a cache entry while other processes may be using the cache
// (`kiln cache gc`). An entry is left alone when it is in use:
//   - being compiled or published: its key's lock file is held by a live
//     process (compiler_cache/lock.h);
//   - being read: every read holds a shared flock() on the entry while it
//     reads (compiler_cache/atomic_file.h read_file), and eviction needs the
//     exclusive one without waiting;
//   - used or replaced since it was listed: its mtime (a hit touches it) or
//     its inode (a publish renames a new file over it) changed.
// Even a reader that opened the entry just before the unlink reads it whole
// (the data lives until the last descriptor closes); one that comes after
// sees a miss and compiles.
#pragma once

#include <cstdint>
#include <string>

namespace kiln::compiler_cache {

// Failed: the unlink itself was refused (a read-only cache: EROFS, EACCES),
// with errno set to why, so gc does not call a cache it cannot change "in use".
enum class Eviction { Removed, InUse, Changed, Gone, Failed };

// `listed_mtime_ns`: the entry's mtime when gc chose it (nanoseconds).
Eviction evict_entry(const std::string& entry_path, int64_t listed_mtime_ns);

// st_mtim in nanoseconds, or -1 if `path` cannot be stat'ed.
int64_t mtime_ns(const std::string& path);

}  // namespace kiln::compiler_cache
