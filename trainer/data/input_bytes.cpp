#include "trainer/data/input_bytes.h"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/error.h"
#include "core/regular_file.h"

namespace kiln::data {

namespace {
constexpr size_t kBufferBytes = 1 << 18;
constexpr int kGzipOnly = 16 + MAX_WBITS;  // inflate gzip framing, not zlib's
constexpr int kWaitCheckMs = 250;          // how soon a stop is seen while a pipe stalls
}  // namespace

InputBytes::InputBytes(const std::string& path, std::function<void()> while_waiting)
    : path_(path), while_waiting_(std::move(while_waiting)), in_(kBufferBytes) {
  // A pipe is a documented input (--input /dev/stdin); devices are not.
  InputFd in = open_input_stream({path, "--input", "give a .jsonl or .jsonl.gz file, or a pipe", kReadInChunks});
  fd_ = in.release();
  try {
    while (in_len_ < 2 && fill()) {
    }
  } catch (...) {  // while_waiting_ threw (a stop) or the read failed
    ::close(fd_);
    throw;
  }
  gzip_ = in_len_ >= 2 && in_[0] == 0x1f && in_[1] == 0x8b;
  if (gzip_ && inflateInit2(&z_, kGzipOnly) != Z_OK) {
    ::close(fd_);
    throw Error("cannot read --input " + path + ": zlib could not start (out of memory?)");
  }
}

InputBytes::~InputBytes() {
  if (gzip_) inflateEnd(&z_);
  if (fd_ >= 0) ::close(fd_);
}

void InputBytes::wait_for_data() {
  if (!while_waiting_) return;  // a plain blocking read
  // A regular file polls ready at once; a pipe with no writer yet, or a
  // writer that stalls, is polled in short waits so that while_waiting_
  // sees a stop request within kWaitCheckMs.
  pollfd p{fd_, POLLIN, 0};
  for (;;) {
    const int rc = ::poll(&p, 1, kWaitCheckMs);
    if (rc > 0) return;  // data, end of file (POLLHUP) or an error the read reports
    if (rc < 0 && errno != EINTR) return;
    while_waiting_();
  }
}

void InputBytes::fail(const std::string& why) const { throw Error("cannot read --input " + path_ + ": " + why); }

bool InputBytes::fill() {
  if (raw_end_) return false;
  // Keep the unread bytes, moved to the front.
  if (in_pos_ > 0) {
    std::memmove(in_.data(), in_.data() + in_pos_, in_len_ - in_pos_);
    raw_consumed_ += in_pos_;
    in_len_ -= in_pos_;
    in_pos_ = 0;
  }
  if (in_len_ == in_.size()) return true;
  for (;;) {
    wait_for_data();
    const ssize_t n = ::read(fd_, in_.data() + in_len_, in_.size() - in_len_);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) fail(std::strerror(errno));
    if (n == 0) {
      raw_end_ = true;
      return false;
    }
    in_len_ += static_cast<size_t>(n);
    return true;
  }
}

size_t InputBytes::read(char* out, size_t cap) {
  if (!gzip_) {
    if (in_pos_ == in_len_ && !fill()) return 0;
    const size_t n = std::min(cap, in_len_ - in_pos_);
    std::memcpy(out, in_.data() + in_pos_, n);
    in_pos_ += n;
    return n;
  }
  for (;;) {
    if (in_pos_ == in_len_) fill();
    if (between_members_) {
      // Zero padding (tape blocks) is allowed, as Python allows it.
      while (in_pos_ < in_len_ && in_[in_pos_] == 0) ++in_pos_;
      if (in_pos_ == in_len_) {
        if (fill()) continue;
        return 0;
      }
      if (in_len_ - in_pos_ < 2 && fill()) continue;
      if (in_len_ - in_pos_ < 2 || in_[in_pos_] != 0x1f || in_[in_pos_ + 1] != 0x8b)
        fail("byte " + std::to_string(raw_consumed_ + in_pos_) +
             " follows the end of the gzip data and is not another gzip member (plain text appended to a "
             ".gz?); Python's gzip refuses such a file too: compress the whole input");
      if (inflateReset2(&z_, kGzipOnly) != Z_OK) fail("zlib could not restart");
      between_members_ = false;
    }
    z_.next_in = in_.data() + in_pos_;
    z_.avail_in = static_cast<uInt>(in_len_ - in_pos_);
    z_.next_out = reinterpret_cast<Bytef*>(out);
    z_.avail_out = static_cast<uInt>(std::min<size_t>(cap, UINT32_MAX));
    const int rc = inflate(&z_, Z_NO_FLUSH);
    in_pos_ = static_cast<size_t>(z_.next_in - in_.data());
    const size_t produced = static_cast<size_t>(reinterpret_cast<char*>(z_.next_out) - out);
    if (rc == Z_STREAM_END) {
      between_members_ = true;
    } else if (rc == Z_BUF_ERROR) {
      // No progress without more input: the file ended inside a member.
      if (produced == 0 && in_pos_ == in_len_ && raw_end_)
        fail("the gzip data ends early; the .gz file is truncated (recompress or re-download it)");
    } else if (rc != Z_OK) {
      fail(std::string("the gzip data is corrupt (") + (z_.msg ? z_.msg : "zlib error " + std::to_string(rc)) +
           ") at byte " + std::to_string(raw_consumed_ + in_pos_));
    }
    if (produced > 0) return produced;
  }
}

}  // namespace kiln::data
