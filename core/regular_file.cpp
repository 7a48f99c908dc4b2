#include "core/regular_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace kiln {

std::string file_type_name(unsigned mode) {
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISREG(mode)) return "a regular file";
  return "not a regular file";
}

RegularFile open_regular_file(const std::string& path, uint64_t max_bytes) {
  RegularFile out;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    out.problem = std::strerror(errno);
    return out;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    out.problem = std::strerror(errno);
  } else if (!S_ISREG(st.st_mode)) {
    out.problem = "is " + file_type_name(st.st_mode) + ", not a regular file";
  } else if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    out.problem = fmt::format("is {} bytes, over the {}-byte bound", static_cast<uint64_t>(st.st_size), max_bytes);
  }
  if (!out.problem.empty()) {
    ::close(fd);
    return out;
  }
  // Regular files ignore O_NONBLOCK, but clear it so the descriptor behaves
  // as a plain blocking one for whoever reads it.
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  out.fd = fd;
  out.size = static_cast<uint64_t>(st.st_size);
  return out;
}

}  // namespace kiln
