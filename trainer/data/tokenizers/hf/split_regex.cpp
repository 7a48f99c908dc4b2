#include "trainer/data/tokenizers/hf/split_regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "core/error.h"
#include "trainer/data/gpt2_tokenizer.h"
#include "trainer/data/tokenizers/hf/llama3_scanner.h"

namespace kiln::data::hf {

const char* const SplitRegex::kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
const char* const SplitRegex::kLlama3Pattern =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

namespace {

// Oniguruma's \s (Hugging Face's Rust tokenizers) is Unicode White_Space,
// which has U+0085 (NEL); PCRE2's \s with UCP has not. The pattern is
// rewritten so that PCRE2 matches as Oniguruma: \s gains U+0085 outside and
// inside character classes, \S loses it outside them (a \S inside a class
// is left as it is; no tokenizer pattern kiln knows uses one).
std::string with_onig_whitespace(const std::string& pattern) {
  std::string out;
  bool in_class = false;
  for (size_t i = 0; i < pattern.size(); ++i) {
    char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      char e = pattern[++i];
      if (e == 's')
        out += in_class ? "\\s\\x{85}" : "[\\s\\x{85}]";
      else if (e == 'S' && !in_class)
        out += "[^\\s\\x{85}]";
      else
        out += c, out += e;
      continue;
    }
    if (!in_class && c == '[') {
      in_class = true;
      out += c;
      // A ']' right after '[' or '[^' is a literal.
      if (i + 1 < pattern.size() && pattern[i + 1] == '^') out += pattern[++i];
      if (i + 1 < pattern.size() && pattern[i + 1] == ']') out += pattern[++i];
      continue;
    }
    if (in_class && c == ']') in_class = false;
    out += c;
  }
  return out;
}

// A failed pcre2_match in words: PCRE2's own message, and for the limits a
// pattern with nested quantifiers hits on a long run of text (catastrophic
// backtracking, e.g. (a+)+$), what to change. The bare code (-47) told a
// user nothing (finding N47).
std::string match_failure(int rc, const std::string& where) {
  PCRE2_UCHAR message[256];
  if (pcre2_get_error_message(rc, message, sizeof message) < 0) message[0] = 0;
  std::string line = where + " regex failed on the text (PCRE2 error " + std::to_string(rc) + ": " +
                     reinterpret_cast<const char*>(message) + ")";
  if (rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT || rc == PCRE2_ERROR_HEAPLIMIT ||
      rc == PCRE2_ERROR_JIT_STACKLIMIT)
    line += "; the pattern backtracks without bound on this text (nested quantifiers such as (a+)+): simplify it";
  return line;
}

}  // namespace

struct SplitRegex::Compiled {
  pcre2_code* code = nullptr;
  ~Compiled() { pcre2_code_free(code); }
};

SplitRegex::SplitRegex(const std::string& pattern, const std::string& where, Engine engine) : where_(where) {
  if (engine == Engine::kAuto) {
    if (pattern == kGpt2Pattern) scanner_ = Scanner::kGpt2;
    if (pattern == kLlama3Pattern) scanner_ = Scanner::kLlama3;
  }
  pcre_ = std::make_unique<Compiled>();
  int error = 0;
  PCRE2_SIZE offset = 0;
  const std::string rewritten = with_onig_whitespace(pattern);
  pcre_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(rewritten.data()), rewritten.size(), PCRE2_UTF | PCRE2_UCP,
                              &error, &offset, nullptr);
  if (!pcre_->code) {
    PCRE2_UCHAR message[256];
    pcre2_get_error_message(error, message, sizeof message);
    throw Error(where + " regex does not compile (" + reinterpret_cast<const char*>(message) + ")");
  }
  pcre2_jit_compile(pcre_->code, PCRE2_JIT_COMPLETE);  // without JIT (no support) the interpreter runs it
}

SplitRegex::~SplitRegex() = default;

bool SplitRegex::scan_pieces(std::string_view text, std::vector<std::string_view>& out) const {
  if (scanner_ == Scanner::kGpt2) {
    Gpt2Tokenizer::pretokenize(text, out);
    return true;
  }
  if (scanner_ == Scanner::kLlama3) {
    llama3_pieces(text, [&](size_t b, size_t e) { out.push_back(text.substr(b, e - b)); });
    return true;
  }
  return false;
}

void SplitRegex::find_matches(std::string_view text, std::vector<Span>& out) const {
  if (scanner_ == Scanner::kGpt2) {
    std::vector<std::string_view> pieces;
    Gpt2Tokenizer::pretokenize(text, pieces);
    for (std::string_view p : pieces) {
      size_t b = static_cast<size_t>(p.data() - text.data());
      out.push_back(Span{b, b + p.size()});
    }
    return;
  }
  if (scanner_ == Scanner::kLlama3) {
    llama3_pieces(text, [&](size_t b, size_t e) { out.push_back(Span{b, e}); });
    return;
  }
  pcre2_match_data* md = pcre2_match_data_create_from_pattern(pcre_->code, nullptr);
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t start = 0;
  while (start <= text.size()) {
    // The text was checked as UTF-8 before, so PCRE2 need not check it again.
    int rc = pcre2_match(pcre_->code, subject, text.size(), start, PCRE2_NO_UTF_CHECK, md, nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      pcre2_match_data_free(md);
      throw Error(match_failure(rc, where_));
    }
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
    size_t b = ov[0], e = ov[1];
    if (e > b) out.push_back(Span{b, e});
    if (e > b) {
      start = e;
    } else {  // an empty match: go on after the next character, as Oniguruma's find_iter
      if (b >= text.size()) break;
      size_t next = b + 1;
      while (next < text.size() && (static_cast<uint8_t>(text[next]) & 0xC0) == 0x80) ++next;
      start = next;
    }
  }
  pcre2_match_data_free(md);
}

}  // namespace kiln::data::hf
