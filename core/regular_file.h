// Opening a file that kiln will read whole or dlopen, refusing anything but a
// regular file first. open() of a FIFO blocks until a writer appears, read()
// of /dev/zero never ends, and dlopen() of a FIFO blocks too: a stray special
// file in a cache or plugin directory must cost one line, never a hang.
#pragma once

#include <cstdint>
#include <string>

namespace kiln {

struct RegularFile {
  int fd = -1;          // open O_RDONLY | O_CLOEXEC; -1 on failure
  uint64_t size = 0;    // st_size at open
  std::string problem;  // one line without the path; empty on success
};

// Opens `path` without blocking (O_NONBLOCK, so a FIFO cannot stall the open)
// and fstat()s it: anything not a regular file, or larger than `max_bytes`,
// is closed again and described in `problem`. The caller closes `fd`.
RegularFile open_regular_file(const std::string& path, uint64_t max_bytes);

// "a FIFO", "a character device", ... for a st_mode.
std::string file_type_name(unsigned mode);

}  // namespace kiln
