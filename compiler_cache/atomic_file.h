// Publishing files so that readers see either nothing or the whole file:
// write a temp file in the destination's directory (same filesystem), fsync
// it, rename it over the destination, fsync the directory. A process killed
// at any point leaves at most a temp file ("*.tmp.<host>.<pid>.<rand>"),
// which no reader looks at and `kiln cache clear`/`gc` removes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::compiler_cache {

// Throws kiln::Error naming the path and the errno text.
void write_file_atomically(const std::string& path, const void* data, size_t size);
// Cache files are at most this big: an entry holds one graph's IR and one
// compiled executable, far below it. Anything larger is not ours.
constexpr uint64_t kMaxCacheFileBytes = uint64_t{4} << 30;
// Whole file; throws kiln::Error if it cannot be read, is not a regular file
// (a FIFO would block, /dev/zero never ends) or is larger than max_bytes.
// Holds a shared flock() while reading (compiler_cache/evict.h).
std::vector<uint8_t> read_file(const std::string& path, uint64_t max_bytes = kMaxCacheFileBytes);
// mkdir -p; throws kiln::Error naming the directory.
void make_dirs(const std::string& dir);
bool is_temp_file(const std::string& filename);

}  // namespace kiln::compiler_cache
