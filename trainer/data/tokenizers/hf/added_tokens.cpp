#include "trainer/data/tokenizers/hf/added_tokens.h"

#include <algorithm>
#include <cstring>

#include "trainer/data/byte_level_alphabet.h"
#include "trainer/data/unicode_tables.h"

namespace kiln::data::hf {

namespace {

// The class of the character that ends at `end` (text[..end] is valid UTF-8).
CharClass class_before(std::string_view text, size_t end) {
  size_t b = end - 1;
  while (b > 0 && (static_cast<uint8_t>(text[b]) & 0xC0) == 0x80) --b;
  size_t len;
  return char_class(decode_cp(reinterpret_cast<const uint8_t*>(text.data()) + b, len));
}
CharClass class_at(std::string_view text, size_t at, size_t* len) {
  return char_class(decode_cp(reinterpret_cast<const uint8_t*>(text.data()) + at, *len));
}
// Hugging Face's ends_with_word / starts_with_word: a letter or number.
bool is_word(CharClass c) { return c == kLetter || c == kNumber; }

}  // namespace

AddedTokenMatcher::AddedTokenMatcher(std::vector<AddedToken> tokens) : tokens_(std::move(tokens)) {
  tokens_.erase(std::remove_if(tokens_.begin(), tokens_.end(), [](const AddedToken& t) { return t.content.empty(); }),
                tokens_.end());
  std::stable_sort(tokens_.begin(), tokens_.end(),
                   [](const AddedToken& a, const AddedToken& b) { return a.content.size() > b.content.size(); });
  int distinct = 0;
  for (const AddedToken& t : tokens_) {
    uint8_t b = static_cast<uint8_t>(t.content[0]);
    if (!first_byte_[b]) ++distinct, single_first_byte_ = b;
    first_byte_[b] = true;
  }
  if (distinct != 1) single_first_byte_ = -1;
}

AddedTokenMatcher::Match AddedTokenMatcher::find(std::string_view text, size_t from) const {
  if (tokens_.empty()) return Match{-1, 0, 0};
  for (size_t i = from; i < text.size(); ++i) {
    if (single_first_byte_ >= 0) {  // the usual case ('<' of <|...|>): memchr's speed
      const void* hit = std::memchr(text.data() + i, single_first_byte_, text.size() - i);
      if (!hit) break;
      i = static_cast<size_t>(static_cast<const char*>(hit) - text.data());
    } else if (!first_byte_[static_cast<uint8_t>(text[i])]) {
      continue;
    }
    // Leftmost, then longest: the first token (longest first) found here.
    for (size_t k = 0; k < tokens_.size(); ++k) {
      const AddedToken& t = tokens_[k];
      if (text.compare(i, t.content.size(), t.content) != 0) continue;
      size_t begin = i, end = i + t.content.size();
      if (t.single_word) {
        size_t len;
        bool space_before = begin == 0 || !is_word(class_before(text, begin));
        bool space_after = end == text.size() || !is_word(class_at(text, end, &len));
        if (!space_before || !space_after) {
          // Hugging Face skips this match and resumes after it.
          i = end - 1;
          break;
        }
      }
      if (t.lstrip) {
        while (begin > from && class_before(text, begin) == kSpace) {
          --begin;
          while (begin > from && (static_cast<uint8_t>(text[begin]) & 0xC0) == 0x80) --begin;
        }
      }
      if (t.rstrip) {
        size_t len;
        while (end < text.size() && class_at(text, end, &len) == kSpace) end += len;
      }
      return Match{static_cast<int>(k), begin, end};
    }
  }
  return Match{-1, 0, 0};
}

}  // namespace kiln::data::hf
