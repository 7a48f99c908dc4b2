// The one way kiln opens a file it reads. open() of a FIFO blocks until a
// writer appears, read() of /dev/zero never ends, dlopen() of a FIFO blocks
// too, and a huge file read whole exhausts memory: a stray special file or a
// wrong path must cost one line, never a hang. Every input open in non-test
// code goes through this header (tests/tools/input_open_rule.sh checks it);
// files kiln writes do not.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <utility>

namespace kiln {

// Size bounds per kind of input file, checked against st_size at open.
// JSON configs (config.json, meta.json, model.safetensors.index.json): KBs.
inline constexpr uint64_t kMaxJsonConfigBytes = uint64_t{16} << 20;
// One-line pointer files (latest_checkpointed_iteration.txt, lock files).
inline constexpr uint64_t kMaxPointerFileBytes = 4096;
// Logs kiln appends to and reads back (the cache's usage.log, worker logs).
inline constexpr uint64_t kMaxLogFileBytes = uint64_t{256} << 20;
// Files whose own header says how big they must be (safetensors, Megatron
// .idx/.bin, the dataset index cache): the reader checks the header against
// the size before reading any payload.
inline constexpr uint64_t kBoundedByHeader = std::numeric_limits<uint64_t>::max();
// Files read in chunks of bounded size, never whole (kiln preprocess --input).
inline constexpr uint64_t kReadInChunks = std::numeric_limits<uint64_t>::max();

struct RegularFile {
  int fd = -1;          // open O_RDONLY | O_CLOEXEC; -1 on failure
  uint64_t size = 0;    // st_size at open
  std::string problem;  // one line without the path; empty on success
  int open_errno = 0;   // errno of a failed open() (ENOENT, EACCES, ...); 0 otherwise
};

// Opens `path` without blocking (O_NONBLOCK, so a FIFO cannot stall the open)
// and fstat()s it: anything not a regular file, or larger than `max_bytes`,
// is closed again and described in `problem`. The caller closes `fd`. For
// callers that turn a problem into a warning (cache entries, plugins).
RegularFile open_regular_file(const std::string& path, uint64_t max_bytes);

// "a FIFO", "a character device", ... for a st_mode.
std::string file_type_name(unsigned mode);

// An input file as the error line names it: "cannot read <what> <path>:
// <problem>; <fix>" ("cannot open ..." when open() itself failed), e.g. what = "checkpoint meta.json", fix = "re-save
// it or point --load at another checkpoint".
struct InputFile {
  std::string path;
  std::string what;
  std::string fix;
  uint64_t max_bytes = kBoundedByHeader;
};

// An open input descriptor, closed on destruction.
class InputFd {
 public:
  InputFd(int fd, uint64_t size) : fd_(fd), size_(size) {}
  ~InputFd();
  InputFd(InputFd&& other) noexcept;
  InputFd& operator=(InputFd&&) = delete;
  InputFd(const InputFd&) = delete;
  InputFd& operator=(const InputFd&) = delete;
  int fd() const { return fd_; }
  uint64_t size() const { return size_; }           // st_size at open; 0 for a stream
  int release() { return std::exchange(fd_, -1); }  // the caller closes it

 private:
  int fd_;
  uint64_t size_;
};

// A regular file within file.max_bytes, or kiln::Error with the line above.
InputFd open_input(const InputFile& file);
// The whole file (a small one: configs, pointer files, logs).
std::string read_input(const InputFile& file);
// For inputs where a stream is documented (kiln preprocess --input, e.g.
// /dev/stdin or a named pipe): a regular file within file.max_bytes, or a
// pipe/FIFO (opened blocking: a stream input is waited for, as documented),
// or a terminal. Devices such as /dev/zero, sockets and directories are
// refused with kiln::Error.
InputFd open_input_stream(const InputFile& file);
// The error open_input throws, for a reader that finds a problem later
// (a short read, a header that disagrees with the size).
std::string input_error(const InputFile& file, const std::string& problem, const char* verb = "read");

}  // namespace kiln
