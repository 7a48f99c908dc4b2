// A thread-local cache of BPE results, piece bytes -> ids, shared by the
// byte-level BPE tokenizers (gpt2_tokenizer.cpp, tokenizers/hf/bpe_model.cpp):
// English text repeats a working set of a few thousand words, so most pieces
// skip the merges.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace kiln::data {

inline uint64_t hash_bytes(const uint8_t* p, size_t n) {
  uint64_t h = 0x9E3779B97F4A7C15ull ^ n;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    h = (h ^ w) * 0xBF58476D1CE4E5B9ull;
    h ^= h >> 31;
  }
  uint64_t w = 0;
  for (size_t k = 0; i < n; ++i, ++k) w |= static_cast<uint64_t>(p[i]) << (8 * k);
  h = (h ^ w) * 0x94D049BB133111EBull;
  h ^= h >> 29;
  h *= 0xBF58476D1CE4E5B9ull;
  return (h ^ (h >> 32)) | 1;  // never 0: 0 marks an empty slot
}

// Thread-local cache of piece -> ids, bounded: when half full it is
// cleared (English text keeps its working set of a few thousand words well
// inside it).
struct PieceCache {
  static constexpr size_t kSlots = size_t{1} << 16;
  static constexpr size_t kMaxKey = 64;
  struct Slot {
    uint64_t hash;
    uint32_t key_off, val_off;
    uint16_t key_len, val_len;
  };
  uint64_t owner = 0;
  size_t used = 0;
  std::vector<Slot> slots;
  std::string keys;
  std::vector<int32_t> vals;

  void reset(uint64_t new_owner) {
    owner = new_owner;
    used = 0;
    slots.assign(kSlots, Slot{0, 0, 0, 0, 0});
    keys.clear();
    vals.clear();
  }
  // The slot holding the piece, or the empty slot where it belongs.
  Slot* find(const uint8_t* p, size_t n, uint64_t h) {
    size_t i = h & (kSlots - 1);
    while (true) {
      Slot& s = slots[i];
      if (s.hash == 0) return &s;
      if (s.hash == h && s.key_len == n && std::memcmp(keys.data() + s.key_off, p, n) == 0) return &s;
      i = (i + 1) & (kSlots - 1);
    }
  }
};

}  // namespace kiln::data
