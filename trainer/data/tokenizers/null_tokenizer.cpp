#include "trainer/data/tokenizers/null_tokenizer.h"

#include "core/error.h"

namespace kiln::data {

namespace {

// What Python's int(str) strips around the digits: ASCII whitespace (the
// fields come from split(' '), so tabs and newlines stay in them).
bool is_python_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

std::string quoted(std::string_view field) {
  constexpr size_t kShown = 24;
  std::string s = "\"";
  s += field.substr(0, kShown);
  if (field.size() > kShown) s += "...";
  s += '"';
  return s;
}

}  // namespace

NullTokenizer::NullTokenizer(int64_t vocab_size)
    : vocab_size_(vocab_size), sha256_(content_sha256({std::to_string(vocab_size)})) {
  if (vocab_size <= 0 || vocab_size >= INT32_MAX)
    throw Error("NullTokenizer: --vocab-size " + std::to_string(vocab_size) + " is outside [1, 2^31 - 1)");
}

void NullTokenizer::encode(std::string_view text, std::vector<int32_t>& out) const {
  size_t start = 0;
  for (size_t field_no = 1;; ++field_no) {
    size_t end = text.find(' ', start);
    std::string_view field = text.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start);
    size_t b = 0, e = field.size();
    while (b < e && is_python_space(field[b])) ++b;
    while (e > b && is_python_space(field[e - 1])) --e;
    std::string_view digits = field.substr(b, e - b);
    if (!digits.empty() && digits[0] == '+') digits.remove_prefix(1);
    bool ok = !digits.empty();
    for (char c : digits) ok = ok && c >= '0' && c <= '9';
    int64_t id = 0;
    for (size_t i = 0; ok && i < digits.size() && id <= vocab_size_; ++i) id = id * 10 + (digits[i] - '0');
    if (!ok)
      throw Error("NullTokenizer: field " + std::to_string(field_no) + " " + quoted(field) +
                  " is not a token id; NullTokenizer text is decimal ids separated by single spaces");
    if (id > vocab_size_)
      throw Error("NullTokenizer: token id " + std::string(digits.substr(0, 24)) + " (field " +
                  std::to_string(field_no) + ") is above --vocab-size " + std::to_string(vocab_size_) + " (ids 0.." +
                  std::to_string(vocab_size_) + ", EOD = " + std::to_string(vocab_size_) + "); raise --vocab-size");
    out.push_back(static_cast<int32_t>(id));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
}

std::string NullTokenizer::decode(const int32_t* ids, size_t n) const {
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    if (ids[i] < 0 || ids[i] > vocab_size_)
      throw Error("token id " + std::to_string(ids[i]) + " is outside NullTokenizer's vocabulary (0.." +
                  std::to_string(vocab_size_) + ")");
    if (i) s += ' ';
    s += std::to_string(ids[i]);
  }
  return s;
}

}  // namespace kiln::data
