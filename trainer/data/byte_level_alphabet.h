// GPT-2's byte-level alphabet and a UTF-8 code point reader, shared by the
// GPT-2 BPE (gpt2_tokenizer.cpp) and Hugging Face tokenizer.json files with
// a ByteLevel pre-tokenizer (tokenizers/hf/), whose vocabularies both spell
// raw bytes with these characters.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>

namespace kiln::data {

// GPT-2's bytes_to_unicode(): printable Latin-1 bytes map to themselves,
// the other 68 bytes to U+0100.. in byte order.
struct ByteLevelAlphabet {
  uint32_t byte_to_cp[256];
  int16_t cp_to_byte[512];
  ByteLevelAlphabet() {
    std::fill(std::begin(cp_to_byte), std::end(cp_to_byte), int16_t{-1});
    int n = 0;
    for (int b = 0; b < 256; ++b) {
      bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      byte_to_cp[b] = printable ? static_cast<uint32_t>(b) : static_cast<uint32_t>(256 + n++);
      cp_to_byte[byte_to_cp[b]] = static_cast<int16_t>(b);
    }
  }
  // The byte a character of the alphabet stands for, or -1.
  int byte_of(uint32_t cp) const { return cp < 512 ? cp_to_byte[cp] : -1; }
};

inline const ByteLevelAlphabet& byte_level_alphabet() {
  static const ByteLevelAlphabet m;
  return m;
}

// Decodes one code point of valid UTF-8 at p[0..]; sets len.
inline uint32_t decode_cp(const uint8_t* p, size_t& len) {
  uint8_t b = p[0];
  if (b < 0x80) return len = 1, b;
  if (b < 0xE0) return len = 2, ((b & 0x1Fu) << 6) | (p[1] & 0x3Fu);
  if (b < 0xF0) return len = 3, ((b & 0x0Fu) << 12) | ((p[1] & 0x3Fu) << 6) | (p[2] & 0x3Fu);
  return len = 4, ((b & 0x07u) << 18) | ((p[1] & 0x3Fu) << 12) | ((p[2] & 0x3Fu) << 6) | (p[3] & 0x3Fu);
}

// Appends the UTF-8 of code point cp.
template <class S>
inline void append_utf8(S& s, uint32_t cp) {
  if (cp < 0x80) {
    s.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    s.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    s.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    s.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    s.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    s.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    s.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

}  // namespace kiln::data
