// tokenizer.json's "added_tokens": strings matched in the text before
// pre-tokenization (leftmost, then longest, as Hugging Face's Aho-Corasick
// LeftmostLongest), with their single_word, lstrip and rstrip rules. Tokens
// with "normalized": false are matched in the raw text, the others in the
// normalized text (their content normalized the same way).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::data::hf {

struct AddedToken {
  int32_t id;
  std::string content;
  bool special, single_word, lstrip, rstrip, normalized;
};

class AddedTokenMatcher {
 public:
  // `tokens`: those to match here (contents already normalized where the
  // matcher runs on normalized text).
  explicit AddedTokenMatcher(std::vector<AddedToken> tokens);
  bool empty() const { return tokens_.empty(); }

  // Cuts text into the stretches between added tokens and the tokens:
  // calls text_fn(stretch) for each non-empty stretch and token_fn(id) for
  // each token, in order.
  template <class TextFn, class TokenFn>
  void split(std::string_view text, TextFn&& text_fn, TokenFn&& token_fn) const {
    size_t start = 0;
    size_t pos = 0;
    while (pos < text.size()) {
      Match m = find(text, pos);
      if (m.token < 0) break;
      if (m.begin > start) text_fn(text.substr(start, m.begin - start));
      token_fn(tokens_[static_cast<size_t>(m.token)].id);
      start = pos = m.end;
    }
    if (start < text.size()) text_fn(text.substr(start));
  }

 private:
  struct Match {
    int token;  // index into tokens_, -1: none
    size_t begin, end;
  };
  // The next match at or after pos whose rules hold, its span widened by
  // lstrip/rstrip (never back over `from`).
  Match find(std::string_view text, size_t from) const;

  std::vector<AddedToken> tokens_;  // longest first
  bool first_byte_[256] = {};       // bytes a token starts with
  int single_first_byte_ = -1;      // that byte when there is only one
};

}  // namespace kiln::data::hf
