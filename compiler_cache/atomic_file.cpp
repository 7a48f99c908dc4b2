#include "compiler_cache/atomic_file.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <random>

#include "compiler_cache/lock.h"
#include "core/error.h"
#include "core/regular_file.h"

namespace kiln::compiler_cache {
namespace {

std::string errno_text() { return std::strerror(errno); }

std::string parent_dir(const std::string& path) {
  std::string p = std::filesystem::path(path).parent_path().string();
  return p.empty() ? "." : p;
}

}  // namespace

bool is_temp_file(const std::string& filename) { return filename.find(".tmp.") != std::string::npos; }

void make_dirs(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec && !std::filesystem::is_directory(dir)) throw Error("cannot create directory " + dir + ": " + ec.message());
}

void write_file_atomically(const std::string& path, const void* data, size_t size) {
  std::random_device rd;
  const std::string tmp = path + ".tmp." + this_host() + "." + std::to_string(::getpid()) + "." + std::to_string(rd());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) throw Error("cannot create " + tmp + ": " + errno_text());
  const auto* p = static_cast<const uint8_t*>(data);
  size_t left = size;
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      std::string why = errno_text();
      ::close(fd);
      ::unlink(tmp.c_str());
      throw Error(std::string("cannot write ").append(tmp).append(": ").append(why));
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    std::string why = errno_text();
    ::unlink(tmp.c_str());
    throw Error("cannot flush " + tmp + ": " + why);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string why = errno_text();
    ::unlink(tmp.c_str());
    throw Error("cannot rename " + tmp + " to " + path + ": " + why);
  }
  // The rename itself must survive a crash too.
  int dfd = ::open(parent_dir(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);  // not an input: fsync
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

std::vector<uint8_t> read_file(const std::string& path, uint64_t max_bytes) {
  RegularFile file = open_regular_file(path, max_bytes);
  if (file.fd < 0) throw Error("cannot read " + path + ": " + file.problem);
  const int fd = file.fd;
  // A shared flock while reading: `kiln cache gc` evicts only entries it can
  // flock exclusively at once (compiler_cache/evict.h). Best effort: a file
  // system without flock still reads.
  ::flock(fd, LOCK_SH);
  std::vector<uint8_t> out;
  out.reserve(file.size);
  uint8_t buf[1 << 16];
  for (;;) {
    // A file that grows while it is read is held to the same bound.
    if (out.size() > max_bytes) {
      ::close(fd);
      throw Error(fmt::format("cannot read {}: grew past the {}-byte bound while being read", path, max_bytes));
    }
    ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      std::string why = errno_text();
      ::close(fd);
      throw Error(std::string("cannot read ").append(path).append(": ").append(why));
    }
    if (n == 0) break;
    out.insert(out.end(), buf, buf + n);
  }
  ::close(fd);
  return out;
}

}  // namespace kiln::compiler_cache
