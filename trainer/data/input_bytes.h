// The bytes of a preprocess input: a plain file, or a gzip file of one or
// more members (as `cat a.gz b.gz` or pigz make). Read strictly, as Python's
// gzip module (which Megatron's preprocess_data.py uses) reads it: data
// after the last member that is neither another member nor zero padding is
// an error, not silently dropped (zlib's gzread stops at the first member's
// end when plain text follows it).
#pragma once

#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace kiln::data {

class InputBytes {
 public:
  // `while_waiting` runs whenever the input has had no data for a quarter
  // of a second (a pipe whose writer stalls) and when a signal interrupts
  // the wait; it may throw to end the read (kiln preprocess's stop signals,
  // which a read blocked on a stalled pipe could not see before, N109).
  explicit InputBytes(const std::string& path,
                      std::function<void()> while_waiting = {});  // throws kiln::Error naming --input
  ~InputBytes();
  InputBytes(const InputBytes&) = delete;
  InputBytes& operator=(const InputBytes&) = delete;

  // Up to `cap` bytes of content into `out`; 0 only at the end.
  size_t read(char* out, size_t cap);

 private:
  bool fill();  // more raw bytes after the unread ones; false at the file's end
  [[noreturn]] void fail(const std::string& why) const;

  void wait_for_data();  // polls fd_, running while_waiting_ meanwhile

  std::string path_;
  std::function<void()> while_waiting_;
  int fd_ = -1;
  bool gzip_ = false;
  bool between_members_ = false;  // a member ended: another, zeros, or the end follow
  bool raw_end_ = false;
  uint64_t raw_consumed_ = 0;  // raw bytes before in_[0], for messages
  std::vector<unsigned char> in_;
  size_t in_pos_ = 0, in_len_ = 0;
  z_stream z_{};
};

}  // namespace kiln::data
