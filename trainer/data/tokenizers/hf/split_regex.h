// A Split pattern's matches in a piece of text: PCRE2 (UTF, UCP, JIT) for
// any pattern, or a hand-written scanner when the pattern is one whose
// matches kiln knows to cover the whole text piece after piece (GPT-2's and
// Llama-3's), which is several times faster on English text.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::data::hf {

struct Span {
  size_t begin, end;
};

class SplitRegex {
 public:
  enum class Engine { kAuto, kPcre2 };  // kPcre2: never the scanners (tests compare the two)
  // Throws kiln::Error naming `where` when PCRE2 refuses the pattern.
  SplitRegex(const std::string& pattern, const std::string& where, Engine engine = Engine::kAuto);
  ~SplitRegex();
  SplitRegex(const SplitRegex&) = delete;
  SplitRegex& operator=(const SplitRegex&) = delete;

  // Appends the non-overlapping matches in text, left to right. Throws
  // kiln::Error naming `where` and PCRE2's reason when a match fails (a
  // pattern that backtracks past PCRE2's match or depth limit, N47).
  void find_matches(std::string_view text, std::vector<Span>& out) const;
  // With a scanner: appends the pieces (which tile the text) and returns
  // true; without one returns false.
  bool scan_pieces(std::string_view text, std::vector<std::string_view>& out) const;
  // Whether a scanner runs this pattern rather than PCRE2.
  bool uses_scanner() const { return scanner_ != Scanner::kNone; }

  static const char* const kGpt2Pattern;
  static const char* const kLlama3Pattern;

 private:
  enum class Scanner { kNone, kGpt2, kLlama3 };
  Scanner scanner_ = Scanner::kNone;
  std::string where_;  // the pattern's place in tokenizer.json, for a failed match
  struct Compiled;
  std::unique_ptr<Compiled> pcre_;
};

}  // namespace kiln::data::hf
