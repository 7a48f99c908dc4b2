// The HuggingFace safetensors format, byte for byte: an 8-byte little-endian
// header length N, N bytes of JSON (space-padded to a multiple of 8) mapping
// tensor names to {dtype, shape, data_offsets} plus optional string-to-string
// "__metadata__", then the tensors' raw little-endian bytes, contiguous.
// Checkpoints use it so other tools (PyTorch, HF) can open them.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/error.h"

namespace kiln::trainer {

// One tensor: the dtype is the safetensors name ("F32", "I64", ...) and data
// holds numel * dtype size bytes, little-endian, row-major.
struct SafeTensor {
  std::string dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;

  // -1 when a dim is negative or the product overflows.
  int64_t numel() const;

  // Typed construction and access; they throw kiln::Error when the value
  // count does not match the shape or the dtype is not the one asked for.
  static SafeTensor from_f32(std::vector<int64_t> shape, const std::vector<float>& values);
  static SafeTensor from_i32(std::vector<int64_t> shape, const std::vector<int32_t>& values);
  static SafeTensor from_i64(std::vector<int64_t> shape, const std::vector<int64_t>& values);
  std::vector<float> to_f32() const;
  std::vector<int32_t> to_i32() const;
  std::vector<int64_t> to_i64() const;
};

// Bytes per element of a safetensors dtype, or 0 if the dtype is unknown.
size_t safetensors_dtype_size(const std::string& dtype);

// The name of the first F32 tensor holding a NaN or an infinity, or "": a
// checkpoint of such weights is a trap for whoever loads it, so neither
// kiln train's saves nor kiln import write one.
std::string first_non_finite(const std::map<std::string, SafeTensor>& tensors);

struct SafetensorsFile {
  std::map<std::string, SafeTensor> tensors;
  std::map<std::string, std::string> metadata;
};

// Thrown when a file exists but is not valid safetensors. problem() is the
// bare reason, so callers such as the checkpoint loader can rephrase it.
class SafetensorsError : public Error {
 public:
  SafetensorsError(std::string path, std::string problem);
  const std::string& path() const { return path_; }
  const std::string& problem() const { return problem_; }

 private:
  std::string path_, problem_;
};

// Thrown when a header's tensor has another shape than the reader needs
// (read_safetensors with `expected`, read_safetensors_subset), so a caller
// can say where the needed shape came from.
class TensorShapeError : public Error {
 public:
  using Error::Error;
};

// Writes straight to `path` (no temp file, no fsync: atomicity is the
// caller's business). Tensors are laid out by descending element size, then
// name, so every tensor is aligned to its element size. Throws kiln::Error
// on invalid tensors or I/O failure.
void write_safetensors(const std::string& path, const std::map<std::string, SafeTensor>& tensors,
                       const std::map<std::string, std::string>& metadata);

// The tensors a reader needs, name to shape: when given, the header must
// list exactly these, each with its shape, or read_safetensors throws
// kiln::Error before reading (or allocating for) any payload, so a header
// that claims gigabytes costs nothing.
using ExpectedTensors = std::map<std::string, std::vector<int64_t>>;

// Validates everything against the file size before trusting it; throws
// SafetensorsError on malformed content and kiln::Error if the file cannot
// be opened or does not hold `expected`. Never crashes on hostile input.
SafetensorsFile read_safetensors(const std::string& path, const ExpectedTensors* expected = nullptr);

// The tensors of `wanted` that the file holds, each checked against its
// shape before any payload is read. The file's other tensors (an HF
// export's attention-mask buffers, the names a sharded model keeps in its
// other shards) are validated in the header but neither read nor
// allocated, so a header claiming gigabytes under a name nobody reads
// costs nothing. Names of `wanted` the file lacks are the caller's to
// report (they may be in another shard). Throws as read_safetensors does.
SafetensorsFile read_safetensors_subset(const std::string& path, const ExpectedTensors& wanted);

// Header size cap, as in the reference implementation: a larger header is
// far more likely to be garbage than a real file.
inline constexpr uint64_t kSafetensorsMaxHeader = 100'000'000;

}  // namespace kiln::trainer
