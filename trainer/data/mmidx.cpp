#include "trainer/data/mmidx.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/error.h"
#include "core/regular_file.h"
#include "trainer/data/mapping_fault.h"

namespace kiln::data {

namespace {

constexpr char kMagic[9] = {'M', 'M', 'I', 'D', 'I', 'D', 'X', '\0', '\0'};
constexpr size_t kHeaderSize = 34;

template <class T>
T load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

std::string sys_error() { return std::strerror(errno); }

std::string temp_name(const std::string& path) { return path + ".tmp." + std::to_string(::getpid()); }

void fsync_file(std::FILE* f, const std::string& path) {
  if (std::fflush(f) != 0 || ::fsync(::fileno(f)) != 0) throw Error("cannot write " + path + ": " + sys_error());
}

}  // namespace

size_t dtype_size(TokenDtype d) {
  switch (d) {
    case TokenDtype::U8:
    case TokenDtype::I8: return 1;
    case TokenDtype::I16:
    case TokenDtype::U16: return 2;
    case TokenDtype::I32: return 4;
    case TokenDtype::I64: return 8;
  }
  return 0;
}

TokenDtype optimal_dtype(int64_t vocab_size) { return vocab_size < 65500 ? TokenDtype::U16 : TokenDtype::I32; }

uint64_t hash64(const void* data, size_t n, uint64_t seed) {
  const auto* p = static_cast<const uint8_t*>(data);
  uint64_t h = seed ^ (0x9E3779B97F4A7C15ull * (n + 1));
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    h ^= load<uint64_t>(p + i) * 0xBF58476D1CE4E5B9ull;
    h = ((h << 27) | (h >> 37)) * 0x94D049BB133111EBull;
  }
  for (; i < n; ++i) h = (h ^ p[i]) * 0x100000001B3ull;
  h ^= h >> 33;
  h *= 0xFF51AFD7ED558CCDull;
  h ^= h >> 33;
  return h;
}

MappedFile::MappedFile(const std::string& path) : path_(path) {
  // Bounded by the .idx header, which IndexedDataset checks against both sizes.
  const InputFd in = open_input(
      {path, "Megatron data file", "point --data-path at a kiln preprocess output prefix", kBoundedByHeader});
  size_ = static_cast<size_t>(in.size());
  if (size_ > 0) {
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_SHARED, in.fd(), 0);  // not an input: maps the guarded fd
    if (p == MAP_FAILED) throw Error("cannot mmap " + path + ": " + sys_error());
    data_ = static_cast<const uint8_t*>(p);
  }
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
}

IndexedDataset::IndexedDataset(const std::string& prefix)
    : prefix_(prefix), idx_(prefix + ".idx"), bin_(prefix + ".bin") {
  const std::string& ip = idx_.path();
  const uint8_t* p = idx_.data();
  if (idx_.size() < kHeaderSize || std::memcmp(p, kMagic, sizeof(kMagic)) != 0)
    throw Error(ip + " is not a Megatron MMIDIDX index (bad magic or shorter than its 34-byte header)");
  uint64_t version = load<uint64_t>(p + 9);
  if (version != 1) throw Error(ip + " has MMIDIDX version " + std::to_string(version) + "; only version 1 is known");
  uint8_t code = p[17];
  if (code < 1 || code > 8 || code == 6 || code == 7)
    throw Error(ip + " has dtype code " + std::to_string(code) + "; token ids must be an integer type");
  dtype_ = static_cast<TokenDtype>(code);
  uint64_t s = load<uint64_t>(p + 18), d = load<uint64_t>(p + 26);
  // Counts beyond 2^40 are a corrupt header; the sizes below would wrap.
  if (s > (uint64_t{1} << 40) || d > (uint64_t{1} << 40) || d < 1)
    throw Error(ip + " is corrupt: its header claims " + std::to_string(s) + " sequences and " + std::to_string(d) +
                " document entries (an index holds 0 to 2^40 sequences and 1 to 2^40 entries)");
  const uint64_t expect = kHeaderSize + 12 * s + 8 * d;
  if (expect != idx_.size())
    throw Error(ip + " is inconsistent: " + std::to_string(s) + " sequences and " + std::to_string(d) +
                " document entries need " + std::to_string(expect) + " bytes, the file has " +
                std::to_string(idx_.size()) + " (truncated or not from the same writer)");
  num_sequences_ = static_cast<int64_t>(s);
  num_doc_entries_ = static_cast<int64_t>(d);
  lengths_off_ = kHeaderSize;
  pointers_off_ = lengths_off_ + 4 * s;
  docs_off_ = pointers_off_ + 8 * s;

  lengths_.resize(s);
  if (s) std::memcpy(lengths_.data(), p + lengths_off_, 4 * s);
  const size_t item = dtype_size(dtype_);
  int64_t expected_ptr = 0;
  for (int64_t i = 0; i < num_sequences_; ++i) {
    if (lengths_[static_cast<size_t>(i)] < 0)
      throw Error(ip + ": sequence " + std::to_string(i) + " has a negative length");
    if (sequence_pointer(i) != expected_ptr)
      throw Error(ip + ": sequence " + std::to_string(i) + " starts at byte " + std::to_string(sequence_pointer(i)) +
                  " of " + bin_.path() + ", but the lengths before it end at byte " + std::to_string(expected_ptr));
    expected_ptr += static_cast<int64_t>(lengths_[static_cast<size_t>(i)]) * static_cast<int64_t>(item);
  }
  if (static_cast<uint64_t>(expected_ptr) != bin_.size())
    throw Error(bin_.path() + " has " + std::to_string(bin_.size()) + " bytes, but " + ip + " describes " +
                std::to_string(expected_ptr) + " (the .bin and .idx are not a pair, or one is truncated)");
  if (document_index(0) != 0 || document_index(num_doc_entries_ - 1) != num_sequences_)
    throw Error(ip + ": the document index must start at 0 and end at the sequence count " +
                std::to_string(num_sequences_));
  for (int64_t i = 1; i < num_doc_entries_; ++i)
    if (document_index(i) < document_index(i - 1))
      throw Error(ip + ": the document index decreases at entry " + std::to_string(i));
  fingerprint_ = hash64(p, idx_.size());
}

int32_t IndexedDataset::sequence_length(int64_t i) const { return lengths_[static_cast<size_t>(i)]; }

int64_t IndexedDataset::sequence_pointer(int64_t i) const {
  return load<int64_t>(idx_.data() + pointers_off_ + 8 * static_cast<size_t>(i));
}

int64_t IndexedDataset::document_index(int64_t i) const {
  return load<int64_t>(idx_.data() + docs_off_ + 8 * static_cast<size_t>(i));
}

void IndexedDataset::get(int64_t i, int64_t offset, int64_t length, int32_t* out) const {
  if (i < 0 || i >= num_sequences_ || offset < 0 || length < 0 || offset + length > sequence_length(i))
    throw Error("read past the end of sequence " + std::to_string(i) + " in " + bin_.path());
  const void* fault = read_mapping([&] { copy_tokens(i, offset, length, out); });
  if (fault != nullptr) {
    const auto* at = static_cast<const uint8_t*>(fault);
    const MappedFile& file = at >= bin_.data() && at < bin_.data() + bin_.size() ? bin_ : idx_;
    throw Error(file.path() + " shrank while training read it (it had " + std::to_string(file.size()) +
                " bytes; it was truncated or rewritten in place); restore the file, or rewrite it under a new name "
                "and rename it into place, then resume from the last checkpoint");
  }
}

void IndexedDataset::copy_tokens(int64_t i, int64_t offset, int64_t length, int32_t* out) const {
  // An empty read touches nothing: an empty .bin maps no memory, and memcpy must not see its null pointer.
  if (length == 0) return;
  const size_t item = dtype_size(dtype_);
  const uint8_t* src = bin_.data() + sequence_pointer(i) + static_cast<size_t>(offset) * item;
  const size_t n = static_cast<size_t>(length);
  switch (dtype_) {
    case TokenDtype::U16:
      for (size_t k = 0; k < n; ++k) out[k] = load<uint16_t>(src + 2 * k);
      break;
    case TokenDtype::I32: std::memcpy(out, src, 4 * n); break;
    case TokenDtype::U8:
      for (size_t k = 0; k < n; ++k) out[k] = src[k];
      break;
    case TokenDtype::I8:
      for (size_t k = 0; k < n; ++k) out[k] = static_cast<int8_t>(src[k]);
      break;
    case TokenDtype::I16:
      for (size_t k = 0; k < n; ++k) out[k] = load<int16_t>(src + 2 * k);
      break;
    case TokenDtype::I64:
      for (size_t k = 0; k < n; ++k) out[k] = static_cast<int32_t>(load<int64_t>(src + 8 * k));
      break;
  }
}

// ---- writer

IndexedDatasetWriter::IndexedDatasetWriter(const std::string& prefix, TokenDtype dtype)
    : prefix_(prefix), dtype_(dtype) {
  if (dtype != TokenDtype::U16 && dtype != TokenDtype::I32) throw Error("the writer stores uint16 or int32 tokens");
  tmp_bin_ = temp_name(prefix + ".bin");
  tmp_idx_ = temp_name(prefix + ".idx");
  tmp_lengths_ = temp_name(prefix + ".lengths");
  tmp_docs_ = temp_name(prefix + ".docs");
  auto open = [&](const std::string& path) {
    std::FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) throw Error("cannot create " + path + ": " + sys_error() + " (is the --output-prefix directory writable?)");
    return f;
  };
  bin_ = open(tmp_bin_);
  lengths_ = open(tmp_lengths_);
  docs_ = open(tmp_docs_);
  int64_t zero = 0;
  std::fwrite(&zero, 8, 1, docs_);
}

IndexedDatasetWriter::~IndexedDatasetWriter() {
  for (std::FILE* f : {bin_, lengths_, docs_})
    if (f) std::fclose(f);
  if (!finalized_) {
    std::error_code ec;
    for (const std::string* p : {&tmp_bin_, &tmp_idx_, &tmp_lengths_, &tmp_docs_}) std::filesystem::remove(*p, ec);
  }
}

void IndexedDatasetWriter::add_document(const int32_t* tokens, const int32_t* lengths, size_t num_sequences) {
  size_t total = 0;
  for (size_t s = 0; s < num_sequences; ++s) total += static_cast<size_t>(lengths[s]);
  const size_t item = dtype_size(dtype_);
  buffer_.resize(total * item);
  if (dtype_ == TokenDtype::U16) {
    for (size_t k = 0; k < total; ++k) {
      uint16_t v = static_cast<uint16_t>(tokens[k]);
      std::memcpy(buffer_.data() + 2 * k, &v, 2);
    }
  } else if (total) {
    std::memcpy(buffer_.data(), tokens, 4 * total);
  }
  if (total && std::fwrite(buffer_.data(), 1, buffer_.size(), bin_) != buffer_.size())
    throw Error("cannot write " + tmp_bin_ + ": " + sys_error());
  if (num_sequences && std::fwrite(lengths, 4, num_sequences, lengths_) != num_sequences)
    throw Error("cannot write " + tmp_lengths_ + ": " + sys_error());
  num_sequences_ += static_cast<int64_t>(num_sequences);
  num_tokens_ += static_cast<int64_t>(total);
  ++num_documents_;
  if (std::fwrite(&num_sequences_, 8, 1, docs_) != 1) throw Error("cannot write " + tmp_docs_ + ": " + sys_error());
}

void IndexedDatasetWriter::finalize() {
  fsync_file(bin_, tmp_bin_);
  std::fclose(bin_);
  bin_ = nullptr;
  for (std::FILE** f : {&lengths_, &docs_}) {
    std::fflush(*f);
    std::fclose(*f);
    *f = nullptr;
  }
  std::FILE* idx = std::fopen(tmp_idx_.c_str(), "wb");
  if (!idx) throw Error("cannot create " + tmp_idx_ + ": " + sys_error());
  struct Closer {
    std::FILE* f;
    ~Closer() {
      if (f) std::fclose(f);
    }
  } closer{idx};
  auto put = [&](const void* p, size_t n) {
    if (n && std::fwrite(p, 1, n, idx) != n) throw Error("cannot write " + tmp_idx_ + ": " + sys_error());
  };
  put(kMagic, sizeof(kMagic));
  uint64_t version = 1, s = static_cast<uint64_t>(num_sequences_), d = static_cast<uint64_t>(num_documents_ + 1);
  uint8_t code = static_cast<uint8_t>(dtype_);
  put(&version, 8);
  put(&code, 1);
  put(&s, 8);
  put(&d, 8);
  // Lengths, then pointers computed from them, then document entries:
  // streamed in blocks so memory stays flat.
  std::vector<int32_t> block(1 << 16);
  std::vector<int64_t> ptrs(block.size());
  for (int pass = 0; pass < 2; ++pass) {
    std::FILE* in = std::fopen(tmp_lengths_.c_str(), "rb");  // not an input: this writer's own temporary
    if (!in) throw Error("cannot reopen " + tmp_lengths_ + ": " + sys_error());
    int64_t offset = 0;
    size_t got;
    while ((got = std::fread(block.data(), 4, block.size(), in)) > 0) {
      if (pass == 0) {
        put(block.data(), 4 * got);
      } else {
        for (size_t k = 0; k < got; ++k) {
          ptrs[k] = offset;
          offset += static_cast<int64_t>(block[k]) * static_cast<int64_t>(dtype_size(dtype_));
        }
        put(ptrs.data(), 8 * got);
      }
    }
    std::fclose(in);
  }
  std::FILE* in = std::fopen(tmp_docs_.c_str(), "rb");  // not an input: this writer's own temporary
  if (!in) throw Error("cannot reopen " + tmp_docs_ + ": " + sys_error());
  size_t got;
  while ((got = std::fread(ptrs.data(), 8, ptrs.size(), in)) > 0) put(ptrs.data(), 8 * got);
  std::fclose(in);
  fsync_file(idx, tmp_idx_);
  std::fclose(idx);
  closer.f = nullptr;

  // Publish: .bin first, then .idx, so a reader that finds the new .idx
  // also finds its .bin.
  std::error_code ec;
  std::filesystem::rename(tmp_bin_, prefix_ + ".bin", ec);
  if (!ec) std::filesystem::rename(tmp_idx_, prefix_ + ".idx", ec);
  if (ec) throw Error("cannot publish " + prefix_ + ".bin/.idx: " + ec.message());
  std::filesystem::remove(tmp_lengths_, ec);
  std::filesystem::remove(tmp_docs_, ec);
  finalized_ = true;
  // Make the renames durable.
  std::string dir = std::filesystem::path(prefix_).parent_path().string();
  int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);  // not an input: fsync
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

void write_file_atomic(const std::string& path, const std::string& bytes) {
  const std::string tmp = temp_name(path);
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) throw Error("cannot create " + tmp + ": " + sys_error());
  bool ok =
      std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size() && std::fflush(f) == 0 && ::fsync(::fileno(f)) == 0;
  std::fclose(f);
  std::error_code ec;
  if (ok) std::filesystem::rename(tmp, path, ec);
  if (!ok || ec) {
    std::filesystem::remove(tmp, ec);
    throw Error("cannot write " + path + ": " + sys_error());
  }
}

}  // namespace kiln::data
