// A log file that only ever holds whole records: --metrics-file lines and
// TensorBoard event records. Each record goes out in one append; if it
// cannot be written in full (a full disk, a quota, an I/O error), the
// partial record is cut off again, one warning names the file and the
// reason, and the file takes no more records. Training goes on: losing a
// run to a full metrics disk would cost more than the metrics
// (docs/OPERATIONS.md states the policy).
#pragma once

#include <cstdint>
#include <string>

namespace kiln::trainer {

class AppendFile {
 public:
  // Opens (creating) `path` for appending; throws kiln::Error naming `flag`.
  AppendFile(std::string path, std::string flag);
  ~AppendFile();
  AppendFile(const AppendFile&) = delete;
  AppendFile& operator=(const AppendFile&) = delete;

  // Appends `record` whole, or not at all (then warns once and stops).
  void append(const std::string& record);
  bool failed() const { return failed_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_, flag_;
  int fd_ = -1;
  bool failed_ = false;
};

}  // namespace kiln::trainer
