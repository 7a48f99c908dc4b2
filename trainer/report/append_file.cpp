#include "trainer/report/append_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"
#include "core/log.h"

namespace kiln::trainer {

AppendFile::AppendFile(std::string path, std::string flag) : path_(std::move(path)), flag_(std::move(flag)) {
  fd_ = ::open(path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw Error("cannot open " + flag_ + " " + path_ + " for appending: " + std::strerror(errno));
}

AppendFile::~AppendFile() {
  if (fd_ >= 0) ::close(fd_);
}

void AppendFile::append(const std::string& record) {
  if (failed_) return;
  struct stat before {};
  const bool sized = ::fstat(fd_, &before) == 0 && S_ISREG(before.st_mode);
  size_t done = 0;
  int error = 0;
  while (done < record.size()) {
    const ssize_t n = ::write(fd_, record.data() + done, record.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      error = n < 0 ? errno : ENOSPC;
      break;
    }
    done += static_cast<size_t>(n);
  }
  if (done == record.size()) return;
  failed_ = true;
  // Cut the partial record off, so readers never see half a JSON line.
  const bool cut = done == 0 || (sized && ::ftruncate(fd_, before.st_size) == 0);
  logger().warn("{} {}: cannot write ({}); it {} and gets no more records, training goes on", flag_, path_,
                std::strerror(error), cut ? "ends at its last whole record" : "may end in a partial record");
}

}  // namespace kiln::trainer
