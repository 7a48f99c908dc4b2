// The on-disk format of one compile-cache entry: everything needed to load a
// compiled graph without the compiler, in one self-checking file.
//
//   "KILNCENT"            8 bytes magic
//   u32 format version    (kEntryFormatVersion)
//   char key[64]          the full cache key, lower-case hex
//   u32 section count
//   per section: u32 kind (SectionKind), u64 size, size bytes
//   u64 total length      of the whole file, this field and the checksum included
//   u8  checksum[32]      SHA-256 of every byte before it
//
// All integers little-endian. decode_entry() trusts nothing: it is the
// parser behind every cache read and has its own fuzz target.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kiln::compiler_cache {

inline constexpr char kEntryMagic[8] = {'K', 'I', 'L', 'N', 'C', 'E', 'N', 'T'};
inline constexpr uint32_t kEntryFormatVersion = 1;

enum class SectionKind : uint32_t { Ir = 1, Executable = 2, Metadata = 3 };

struct Entry {
  std::string key;          // 64 hex chars
  std::vector<uint8_t> ir;  // the canonical IR that was compiled
  std::vector<uint8_t> executable;
  std::string metadata;  // JSON object (key parts, graph summary, timings)
};

std::vector<uint8_t> encode_entry(const Entry& entry);

// Throws kiln::Error saying what is wrong (bad magic, truncated, checksum
// mismatch, ...). Unknown section kinds are skipped (later versions may add
// some); each known kind must appear exactly once.
Entry decode_entry(const uint8_t* data, size_t size);

bool is_hex_key(const std::string& s);

}  // namespace kiln::compiler_cache
