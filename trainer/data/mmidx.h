// Megatron's MMIDIDX indexed dataset: <prefix>.bin holds the token ids of
// every sequence back to back; <prefix>.idx holds
//
//   offset 0   9 bytes  magic "MMIDIDX\0\0"
//          9   u64      version (1)
//         17   u8       dtype code (4 int32, 8 uint16; 1 u8, 2 i8, 3 i16, 5 i64 also read)
//         18   u64      S, the number of sequences
//         26   u64      D, the number of document-index entries (documents + 1)
//         34   i32[S]   sequence lengths (tokens)
//              i64[S]   sequence byte offsets into .bin
//              i64[D]   document index: the first sequence of each document,
//                       starting with 0 and ending with S
//
// all little-endian. The arrays start at byte 34, so they are read with
// memcpy, never through a cast pointer.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace kiln::data {

enum class TokenDtype : uint8_t { U8 = 1, I8 = 2, I16 = 3, I32 = 4, I64 = 5, U16 = 8 };

size_t dtype_size(TokenDtype d);
// Megatron's DType.optimal_dtype: uint16 under 65500 ids, else int32.
TokenDtype optimal_dtype(int64_t vocab_size);

// A read-only file mapping.
class MappedFile {
 public:
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

class IndexedDataset {
 public:
  // Maps <prefix>.idx and <prefix>.bin and checks that they agree; throws
  // kiln::Error naming the file and the inconsistency.
  explicit IndexedDataset(const std::string& prefix);

  const std::string& prefix() const { return prefix_; }
  TokenDtype dtype() const { return dtype_; }
  int64_t num_sequences() const { return num_sequences_; }
  int64_t num_documents() const { return num_doc_entries_ - 1; }
  int32_t sequence_length(int64_t i) const;
  int64_t sequence_pointer(int64_t i) const;
  int64_t document_index(int64_t i) const;  // 0 <= i <= num_documents()
  const std::vector<int32_t>& sequence_lengths() const { return lengths_; }
  // length tokens of sequence i from token offset, as int32. Throws
  // kiln::Error naming the file if it shrank since it was mapped.
  void get(int64_t i, int64_t offset, int64_t length, int32_t* out) const;
  // A 64-bit fingerprint of the .idx contents (for index-cache keys).
  uint64_t fingerprint() const { return fingerprint_; }

 private:
  // get()'s copy; reads only the mappings (a SIGBUS jumps out of it).
  void copy_tokens(int64_t i, int64_t offset, int64_t length, int32_t* out) const;

  std::string prefix_;
  MappedFile idx_, bin_;
  TokenDtype dtype_;
  int64_t num_sequences_ = 0, num_doc_entries_ = 0;
  size_t lengths_off_ = 0, pointers_off_ = 0, docs_off_ = 0;
  std::vector<int32_t> lengths_;  // copied: the dataset index builder scans them often
  uint64_t fingerprint_ = 0;
};

// Writes <prefix>.bin/.idx exactly as Megatron's IndexedDatasetBuilder,
// with memory independent of the data size: tokens stream to <prefix>.bin,
// lengths and document boundaries to side files, and finalize() assembles
// the .idx. Everything goes to temporary names first and is renamed into
// place only by finalize(), so readers never see a half-written dataset.
class IndexedDatasetWriter {
 public:
  IndexedDatasetWriter(const std::string& prefix, TokenDtype dtype);
  ~IndexedDatasetWriter();  // removes the temporary files unless finalized
  IndexedDatasetWriter(const IndexedDatasetWriter&) = delete;
  IndexedDatasetWriter& operator=(const IndexedDatasetWriter&) = delete;

  // One document made of sequences with the given lengths (tokens holds
  // them back to back). An empty document still adds a document entry.
  void add_document(const int32_t* tokens, const int32_t* lengths, size_t num_sequences);
  void finalize();
  int64_t num_sequences() const { return num_sequences_; }
  int64_t num_documents() const { return num_documents_; }
  int64_t num_tokens() const { return num_tokens_; }

 private:
  std::string prefix_, tmp_bin_, tmp_idx_, tmp_lengths_, tmp_docs_;
  TokenDtype dtype_;
  std::FILE *bin_ = nullptr, *lengths_ = nullptr, *docs_ = nullptr;
  int64_t num_sequences_ = 0, num_documents_ = 0, num_tokens_ = 0;
  std::vector<uint8_t> buffer_;
  bool finalized_ = false;
};

// 64-bit hash of a byte range (not cryptographic).
uint64_t hash64(const void* data, size_t n, uint64_t seed = 0);

// Writes bytes to path atomically: a temporary file in the same directory,
// fsync, rename. Throws kiln::Error.
void write_file_atomic(const std::string& path, const std::string& bytes);

}  // namespace kiln::data
