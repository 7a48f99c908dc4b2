#include "trainer/data/tokenizers/hf/pre_tokenizers.h"

#include <algorithm>

#include "trainer/data/gpt2_tokenizer.h"
#include "trainer/data/tokenizers/hf/split_regex.h"

namespace kiln::data::hf {

namespace {

constexpr const char* kPreTokenizers = "ByteLevel, Split, Metaspace, Sequence";

// ByteLevel: an optional prefix space, then (use_regex) GPT-2's pattern.
class ByteLevel final : public PreTokenizer {
 public:
  ByteLevel(bool add_prefix_space, bool use_regex) : add_prefix_space_(add_prefix_space), use_regex_(use_regex) {}
  void split(std::string_view piece, bool, std::vector<std::string_view>& out, PieceArena& arena) const override {
    if (add_prefix_space_ && !piece.empty() && piece[0] != ' ') {
      std::string spaced(1, ' ');
      spaced += piece;
      piece = arena.keep(std::move(spaced));
    }
    if (piece.empty()) return;
    if (use_regex_)
      Gpt2Tokenizer::pretokenize(piece, out);
    else
      out.push_back(piece);
  }

 private:
  bool add_prefix_space_, use_regex_;
};

enum class Behavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };

// Cuts text at the matches as Hugging Face's NormalizedString::split does
// with a SplitDelimiterBehavior. Matches are given as spans; `invert` swaps
// the roles of matches and the text between them.
void split_at(std::string_view text, const std::vector<Span>& matches, bool invert, Behavior behavior,
              std::vector<std::string_view>& out) {
  struct Part {
    size_t begin, end;
    bool is_match;
  };
  std::vector<Part> parts;
  size_t prev = 0;
  for (const Span& m : matches) {
    if (m.begin > prev) parts.push_back(Part{prev, m.begin, invert});
    parts.push_back(Part{m.begin, m.end, !invert});
    prev = m.end;
  }
  if (prev < text.size()) parts.push_back(Part{prev, text.size(), invert});
  std::vector<Part> kept;
  bool previous_match = false;
  switch (behavior) {
    case Behavior::kIsolated: kept.swap(parts); break;
    case Behavior::kRemoved:
      for (const Part& p : parts)
        if (!p.is_match) kept.push_back(p);
      break;
    case Behavior::kContiguous:
      for (const Part& p : parts) {
        if (!kept.empty() && p.is_match == previous_match)
          kept.back().end = p.end;
        else
          kept.push_back(p);
        previous_match = p.is_match;
      }
      break;
    case Behavior::kMergedWithPrevious:
      for (const Part& p : parts) {
        if (!kept.empty() && p.is_match && !previous_match)
          kept.back().end = p.end;
        else
          kept.push_back(p);
        previous_match = p.is_match;
      }
      break;
    case Behavior::kMergedWithNext:
      for (size_t k = parts.size(); k-- > 0;) {
        const Part& p = parts[k];
        if (!kept.empty() && p.is_match && !previous_match)
          kept.back().begin = p.begin;
        else
          kept.push_back(p);
        previous_match = p.is_match;
      }
      std::reverse(kept.begin(), kept.end());
      break;
  }
  for (const Part& p : kept)
    if (p.end > p.begin) out.push_back(text.substr(p.begin, p.end - p.begin));
}

Behavior behavior_of(const std::string& name, const Where& where) {
  if (name == "Removed") return Behavior::kRemoved;
  if (name == "Isolated") return Behavior::kIsolated;
  if (name == "MergedWithPrevious") return Behavior::kMergedWithPrevious;
  if (name == "MergedWithNext") return Behavior::kMergedWithNext;
  if (name == "Contiguous") return Behavior::kContiguous;
  where.fail("\"" + name + "\" is not a behavior (Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous)");
}

class Split final : public PreTokenizer {
 public:
  Split(const json& node, const Where& where, const PreTokenizerOptions& options) {
    const json& pattern = need(node, "pattern", where, &json::is_object, "an object");
    if (pattern.contains("String")) {
      literal_ = need_string(pattern, "String", where.at("pattern"));
      if (literal_.empty()) where.at("pattern").fail("is an empty string");
    } else if (pattern.contains("Regex")) {
      regex_ =
          std::make_unique<SplitRegex>(need_string(pattern, "Regex", where.at("pattern")), where.at("pattern").path,
                                       options.force_pcre2 ? SplitRegex::Engine::kPcre2 : SplitRegex::Engine::kAuto);
    } else {
      where.at("pattern").fail("has neither \"String\" nor \"Regex\"");
    }
    behavior_ = behavior_of(need_string(node, "behavior", where), where.at("behavior"));
    invert_ = opt_bool(node, "invert", where, false);
  }
  void split(std::string_view piece, bool, std::vector<std::string_view>& out, PieceArena&) const override {
    // The scanners' pieces tile the text: isolated, they are the result.
    if (behavior_ == Behavior::kIsolated && !invert_ && regex_ && regex_->scan_pieces(piece, out)) return;
    thread_local std::vector<Span> matches;  // reused: a document can have a million pieces
    matches.clear();
    if (regex_) {
      regex_->find_matches(piece, matches);
    } else {
      for (size_t pos = piece.find(literal_); pos != std::string_view::npos;
           pos = piece.find(literal_, pos + literal_.size()))
        matches.push_back(Span{pos, pos + literal_.size()});
    }
    split_at(piece, matches, invert_, behavior_, out);
  }

 private:
  std::string literal_;
  std::unique_ptr<SplitRegex> regex_;
  Behavior behavior_ = Behavior::kIsolated;
  bool invert_ = false;
};

// Metaspace: spaces become the replacement ("▁"), which is prepended
// (prepend_scheme always, or first for the document's first piece) and,
// with split, starts each piece.
class Metaspace final : public PreTokenizer {
 public:
  Metaspace(const json& node, const Where& where) {
    replacement_ = need_string(node, "replacement", where);
    if (replacement_.empty()) where.at("replacement").fail("is empty");
    split_ = opt_bool(node, "split", where, true);
    auto scheme = node.find("prepend_scheme");
    if (scheme != node.end() && !scheme->is_null()) {
      std::string s = need_string(node, "prepend_scheme", where);
      if (s == "always")
        prepend_ = Prepend::kAlways;
      else if (s == "first")
        prepend_ = Prepend::kFirst;
      else if (s == "never")
        prepend_ = Prepend::kNever;
      else
        where.at("prepend_scheme").fail("\"" + s + "\" is not always, first or never");
    } else {
      prepend_ = opt_bool(node, "add_prefix_space", where, true) ? Prepend::kAlways : Prepend::kNever;
    }
  }
  void split(std::string_view piece, bool at_start, std::vector<std::string_view>& out,
             PieceArena& arena) const override {
    std::string s;
    s.reserve(piece.size() + replacement_.size());
    for (char c : piece) {
      if (c == ' ')
        s += replacement_;
      else
        s += c;
    }
    bool starts = s.compare(0, replacement_.size(), replacement_) == 0;
    if (!starts && (prepend_ == Prepend::kAlways || (prepend_ == Prepend::kFirst && at_start)))
      s.insert(0, replacement_);
    std::string_view text = arena.keep(std::move(s));
    if (!split_) {
      if (!text.empty()) out.push_back(text);
      return;
    }
    std::vector<Span> matches;
    for (size_t pos = text.find(replacement_); pos != std::string_view::npos;
         pos = text.find(replacement_, pos + replacement_.size()))
      matches.push_back(Span{pos, pos + replacement_.size()});
    split_at(text, matches, false, Behavior::kMergedWithNext, out);
  }

 private:
  enum class Prepend { kAlways, kFirst, kNever };
  std::string replacement_;
  Prepend prepend_ = Prepend::kAlways;
  bool split_ = true;
};

class Sequence final : public PreTokenizer {
 public:
  explicit Sequence(std::vector<std::unique_ptr<PreTokenizer>> steps) : steps_(std::move(steps)) {}
  void split(std::string_view piece, bool at_start, std::vector<std::string_view>& out,
             PieceArena& arena) const override {
    std::vector<std::string_view> current, next;
    current.push_back(piece);
    for (const auto& step : steps_) {
      next.clear();
      for (size_t i = 0; i < current.size(); ++i) step->split(current[i], at_start && i == 0, next, arena);
      current.swap(next);
    }
    out.insert(out.end(), current.begin(), current.end());
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> steps_;
};

std::unique_ptr<PreTokenizer> make(const json& node, const Where& where, bool* byte_level,
                                   const PreTokenizerOptions& options) {
  const std::string type = type_of(node, where);
  if (*byte_level) where.fail("follows a ByteLevel pre-tokenizer; kiln needs ByteLevel last");
  if (type == "ByteLevel") {
    *byte_level = true;
    bool add_prefix_space = opt_bool(node, "add_prefix_space", where, true);
    bool use_regex = opt_bool(node, "use_regex", where, true);
    // Without both it only maps bytes, which the byte-level model does: no step (Llama-3's layout).
    if (!add_prefix_space && !use_regex) return nullptr;
    return std::make_unique<ByteLevel>(add_prefix_space, use_regex);
  }
  if (type == "Split") return std::make_unique<Split>(node, where, options);
  if (type == "Metaspace") return std::make_unique<Metaspace>(node, where);
  if (type == "Sequence") {
    const json& list = need_array(node, "pretokenizers", where);
    std::vector<std::unique_ptr<PreTokenizer>> steps;
    for (size_t i = 0; i < list.size(); ++i)
      if (auto step = make(list[i], where.at("pretokenizers").at(i), byte_level, options))
        steps.push_back(std::move(step));
    if (steps.size() == 1) return std::move(steps[0]);
    return std::make_unique<Sequence>(std::move(steps));
  }
  unsupported(where, type, kPreTokenizers);
}

}  // namespace

std::unique_ptr<PreTokenizer> make_pre_tokenizer(const json& node, const Where& where, bool* byte_level,
                                                 const PreTokenizerOptions& options) {
  *byte_level = false;
  if (node.is_null()) return nullptr;
  return make(node, where, byte_level, options);
}

}  // namespace kiln::data::hf
