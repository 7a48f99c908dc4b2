#include "core/regular_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "core/error.h"

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
    out.open_errno = errno;
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

InputFd::~InputFd() {
  if (fd_ >= 0) ::close(fd_);
}

InputFd::InputFd(InputFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)), size_(other.size_) {}

std::string input_error(const InputFile& file, const std::string& problem, const char* verb) {
  std::string line = std::string("cannot ") + verb + " ";
  if (!file.what.empty()) line += file.what + " ";
  line += file.path + ": " + problem;
  if (!file.fix.empty()) line += "; " + file.fix;
  return line;
}

InputFd open_input(const InputFile& file) {
  RegularFile f = open_regular_file(file.path, file.max_bytes);
  if (f.fd < 0) throw Error(input_error(file, f.problem, f.open_errno != 0 ? "open" : "read"));
  return InputFd(f.fd, f.size);
}

std::string read_input(const InputFile& file) {
  InputFd in = open_input(file);
  std::string bytes(in.size(), '\0');
  size_t got = 0;
  while (got < bytes.size()) {
    const ssize_t n = ::read(in.fd(), bytes.data() + got, bytes.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error(input_error(file, std::strerror(errno)));
    if (n == 0) break;  // shrank while read: what is there is the file
    got += static_cast<size_t>(n);
  }
  bytes.resize(got);
  return bytes;
}

InputFd open_input_stream(const InputFile& file) {
  // A named FIFO (or /dev/stdin of `zcat x.gz | kiln ...`, a pipe) is a
  // stream, waited for: one blocking open, which returns once it has a
  // writer, and that one descriptor reads all it writes. Opening it first
  // without blocking and then again lost the input: a writer that came
  // between the two wrote into the pipe of the first descriptor, whose close
  // dropped the data, and the second open then waited for a writer forever.
  struct stat named {};
  if (::stat(file.path.c_str(), &named) == 0 && S_ISFIFO(named.st_mode)) {
    const int stream = ::open(file.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (stream < 0) throw Error(input_error(file, std::strerror(errno), "open"));
    struct stat st {};
    if (::fstat(stream, &st) == 0 && S_ISFIFO(st.st_mode)) return InputFd(stream, 0);
    ::close(stream);  // replaced by something else since the stat: look again below
  }
  const int fd = ::open(file.path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw Error(input_error(file, std::strerror(errno), "open"));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int saved = errno;
    ::close(fd);
    throw Error(input_error(file, std::strerror(saved)));
  }
  if (S_ISREG(st.st_mode)) {
    ::close(fd);
    return open_input(file);
  }
  if (S_ISFIFO(st.st_mode)) {
    // Became a FIFO after the stat above: read this descriptor, blocking.
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    return InputFd(fd, 0);
  }
  if (S_ISCHR(st.st_mode) && ::isatty(fd)) {
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    return InputFd(fd, 0);
  }
  ::close(fd);
  throw Error(input_error(file, "is " + file_type_name(st.st_mode) + ", not a regular file or a pipe"));
}

}  // namespace kiln
