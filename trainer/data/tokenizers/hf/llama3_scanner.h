// Llama-3's (tiktoken cl100k-style) pre-tokenization pattern
//   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
//    ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
// as a hand-written scanner over the Unicode class tables: the first
// alternative that matches at each position, as a backtracking engine
// chooses it. Every character is in some piece, so the pieces tile the text.
// The text must be valid UTF-8.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "trainer/data/byte_level_alphabet.h"
#include "trainer/data/unicode_tables.h"

namespace kiln::data::hf {

namespace llama3_detail {

inline CharClass class_at(const uint8_t* p, size_t& len) {
  if (p[0] < 0x80) return len = 1, static_cast<CharClass>(kAsciiClass[p[0]]);
  return char_class(decode_cp(p, len));
}

// End of the run of class cls from i.
inline size_t run_end(const uint8_t* p, size_t n, size_t i, CharClass cls) {
  while (i < n) {
    size_t len;
    if (class_at(p + i, len) != cls) break;
    i += len;
  }
  return i;
}

inline bool is_s(const uint8_t* p, size_t n, size_t i, size_t& len) {  // s, S or U+017F (folds to s)
  if (p[i] == 's' || p[i] == 'S') return len = 1, true;
  if (i + 1 < n && p[i] == 0xC5 && p[i + 1] == 0xBF) return len = 2, true;
  return false;
}

inline size_t piece_end(const uint8_t* p, size_t n, size_t i) {
  const uint8_t c = p[i];
  if (c == '\'' && i + 1 < n) {  // (?i:'s|'t|'re|'ve|'m|'ll|'d)
    const uint8_t d = p[i + 1] | 0x20;
    size_t len;
    if (is_s(p, n, i + 1, len)) return i + 1 + len;
    if (d == 't' || d == 'm' || d == 'd') return i + 2;
    if (i + 2 < n) {
      const uint8_t e = p[i + 2] | 0x20;
      if ((d == 'r' && e == 'e') || (d == 'v' && e == 'e') || (d == 'l' && e == 'l')) return i + 3;
    }
  }
  size_t len;
  const CharClass cls = class_at(p + i, len);
  if (cls == kLetter) return run_end(p, n, i + len, kLetter);
  if (cls != kNumber && c != '\r' && c != '\n' && i + len < n) {  // [^\r\n\p{L}\p{N}]?\p{L}+
    size_t len2;
    if (class_at(p + i + len, len2) == kLetter) return run_end(p, n, i + len + len2, kLetter);
  }
  if (cls == kNumber) {  // \p{N}{1,3}
    size_t j = i + len;
    for (int k = 1; k < 3 && j < n; ++k) {
      size_t l;
      if (class_at(p + j, l) != kNumber) break;
      j += l;
    }
    return j;
  }
  if (cls == kOther || (c == ' ' && i + 1 < n && class_at(p + i + 1, len) == kOther)) {
    // " ?[^\s\p{L}\p{N}]+[\r\n]*"
    size_t j = cls == kOther ? i : i + 1;
    j = run_end(p, n, j, kOther);
    while (j < n && (p[j] == '\r' || p[j] == '\n')) ++j;
    return j;
  }
  // Whitespace from here. "\s*[\r\n]+": up to the run's last \r or \n.
  size_t j = run_end(p, n, i, kSpace);
  for (size_t k = j; k > i; --k)
    if (p[k - 1] == '\r' || p[k - 1] == '\n') return k;
  // "\s+(?!\S)" then "\s+", as in GPT-2's pattern.
  if (j == n) return n;
  size_t last = j - 1;
  while ((p[last] & 0xC0) == 0x80) --last;
  return last > i ? last : j;
}

}  // namespace llama3_detail

// Calls f(begin, end) for each piece of text, in order.
template <class F>
inline void llama3_pieces(std::string_view text, F&& f) {
  const auto* p = reinterpret_cast<const uint8_t*>(text.data());
  const size_t n = text.size();
  for (size_t i = 0; i < n;) {
    size_t j = llama3_detail::piece_end(p, n, i);
    f(i, j);
    i = j;
  }
}

}  // namespace kiln::data::hf
