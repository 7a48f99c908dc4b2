#include "compiler_cache/entry_format.h"

#include <cstring>

#include "core/error.h"
#include "core/hash.h"

namespace kiln::compiler_cache {
namespace {

constexpr size_t kKeyChars = 64;
constexpr size_t kChecksumBytes = 32;

// Writes into a buffer sized up front (one allocation, no reallocation
// while appending).
class Writer {
 public:
  explicit Writer(size_t size) : out_(size) {}
  void u32(uint32_t v) {
    for (int i = 0; i < 4; ++i) out_[pos_++] = static_cast<uint8_t>(v >> (8 * i));
  }
  void u64(uint64_t v) {
    for (int i = 0; i < 8; ++i) out_[pos_++] = static_cast<uint8_t>(v >> (8 * i));
  }
  void bytes(const void* p, size_t n) {
    if (n > 0) std::memcpy(out_.data() + pos_, p, n);
    pos_ += n;
  }
  size_t pos() const { return pos_; }
  std::vector<uint8_t>& out() { return out_; }

 private:
  std::vector<uint8_t> out_;
  size_t pos_ = 0;
};

// Bounds-checked little-endian reader over untrusted bytes.
class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  size_t pos() const { return pos_; }
  size_t left() const { return size_ - pos_; }
  const uint8_t* take(size_t n, const char* what) {
    if (n > left()) throw Error(std::string("cache entry is truncated (in ") + what + ")");
    const uint8_t* p = data_ + pos_;
    pos_ += n;
    return p;
  }
  uint32_t u32(const char* what) {
    const uint8_t* p = take(4, what);
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(p[i]) << (8 * i);
    return v;
  }
  uint64_t u64(const char* what) {
    const uint8_t* p = take(8, what);
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
    return v;
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

std::vector<uint8_t> hex_to_bytes(const std::string& hex) {
  std::vector<uint8_t> out(hex.size() / 2);
  auto nibble = [](char c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = static_cast<uint8_t>(nibble(hex[2 * i]) * 16 + nibble(hex[2 * i + 1]));
  return out;
}

}  // namespace

bool is_hex_key(const std::string& s) {
  if (s.size() != kKeyChars) return false;
  for (char c : s)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  return true;
}

std::vector<uint8_t> encode_entry(const Entry& entry) {
  if (!is_hex_key(entry.key)) throw Error("cache entry key '" + entry.key + "' is not 64 lower-case hex digits");
  const size_t total = sizeof(kEntryMagic) + 4 + kKeyChars + 4 + 3 * (4 + 8) + entry.ir.size() +
                       entry.executable.size() + entry.metadata.size() + 8 + kChecksumBytes;
  Writer w(total);
  w.bytes(kEntryMagic, sizeof(kEntryMagic));
  w.u32(kEntryFormatVersion);
  w.bytes(entry.key.data(), kKeyChars);
  w.u32(3);
  auto section = [&](SectionKind kind, const void* p, size_t n) {
    w.u32(static_cast<uint32_t>(kind));
    w.u64(n);
    w.bytes(p, n);
  };
  section(SectionKind::Ir, entry.ir.data(), entry.ir.size());
  section(SectionKind::Executable, entry.executable.data(), entry.executable.size());
  section(SectionKind::Metadata, entry.metadata.data(), entry.metadata.size());
  w.u64(total);
  const std::vector<uint8_t> sum = hex_to_bytes(sha256_hex(w.out().data(), w.pos()));
  w.bytes(sum.data(), sum.size());
  return std::move(w.out());
}

Entry decode_entry(const uint8_t* data, size_t size) {
  // The checksum first: a flipped bit anywhere is reported as such, before
  // any field is interpreted.
  if (size < sizeof(kEntryMagic) + 4 + kKeyChars + 4 + 8 + kChecksumBytes)
    throw Error("cache entry is truncated (" + std::to_string(size) + " bytes)");
  if (std::memcmp(data, kEntryMagic, sizeof(kEntryMagic)) != 0) throw Error("cache entry has a bad magic number");
  const size_t body = size - kChecksumBytes;
  const std::vector<uint8_t> want = hex_to_bytes(sha256_hex(data, body));
  if (std::memcmp(want.data(), data + body, kChecksumBytes) != 0)
    throw Error("cache entry checksum mismatch (truncated or corrupted)");

  Reader r(data, body);
  r.take(sizeof(kEntryMagic), "magic");
  const uint32_t version = r.u32("version");
  if (version != kEntryFormatVersion)
    throw Error("cache entry has format version " + std::to_string(version) + ", this kiln reads " +
                std::to_string(kEntryFormatVersion));
  Entry e;
  const uint8_t* key = r.take(kKeyChars, "key");
  e.key.assign(reinterpret_cast<const char*>(key), kKeyChars);
  if (!is_hex_key(e.key)) throw Error("cache entry key is not 64 lower-case hex digits");
  const uint32_t count = r.u32("section count");
  bool seen[4] = {false, false, false, false};
  for (uint32_t s = 0; s < count; ++s) {
    const uint32_t kind = r.u32("section kind");
    const uint64_t n = r.u64("section size");
    if (n > r.left()) throw Error("cache entry section " + std::to_string(s) + " overruns the file");
    const uint8_t* p = r.take(static_cast<size_t>(n), "section");
    if (kind < 1 || kind > 3) continue;
    if (seen[kind]) throw Error("cache entry repeats section kind " + std::to_string(kind));
    seen[kind] = true;
    switch (static_cast<SectionKind>(kind)) {
      case SectionKind::Ir: e.ir.assign(p, p + n); break;
      case SectionKind::Executable: e.executable.assign(p, p + n); break;
      case SectionKind::Metadata: e.metadata.assign(reinterpret_cast<const char*>(p), static_cast<size_t>(n)); break;
    }
  }
  if (!seen[1] || !seen[2] || !seen[3]) throw Error("cache entry lacks a section (IR, executable or metadata)");
  const uint64_t total = r.u64("length");
  if (total != size)
    throw Error("cache entry length field says " + std::to_string(total) + " bytes, file has " + std::to_string(size));
  if (r.left() != 0) throw Error("cache entry has trailing bytes");
  return e;
}

}  // namespace kiln::compiler_cache
