#include "trainer/data/tokenizers/hf/normalizers.h"

#include <vector>

#include "trainer/data/tokenizers/hf/nfc.h"
#include "trainer/data/tokenizers/hf/split_regex.h"

namespace kiln::data::hf {

namespace {

constexpr const char* kNormalizers = "NFC, Prepend, Replace, Sequence";

class Nfc final : public Normalizer {
 public:
  void normalize(std::string& text) const override { nfc_in_place(text); }
};

// Prepends a string to non-empty text (Llama-2's "▁").
class Prepend final : public Normalizer {
 public:
  explicit Prepend(std::string prefix) : prefix_(std::move(prefix)) {}
  void normalize(std::string& text) const override {
    if (!text.empty()) text.insert(0, prefix_);
  }

 private:
  std::string prefix_;
};

class Replace final : public Normalizer {
 public:
  Replace(const json& node, const Where& where) : pattern_(node, where) {}
  void normalize(std::string& text) const override { pattern_.apply(text); }

 private:
  ReplacePattern pattern_;
};

class Sequence final : public Normalizer {
 public:
  explicit Sequence(std::vector<std::unique_ptr<Normalizer>> steps) : steps_(std::move(steps)) {}
  void normalize(std::string& text) const override {
    for (const auto& s : steps_) s->normalize(text);
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> steps_;
};

}  // namespace

struct ReplacePattern::Regex {
  std::unique_ptr<SplitRegex> re;
};

ReplacePattern::ReplacePattern(const json& node, const Where& where) {
  content_ = need_string(node, "content", where);
  const json& pattern = need(node, "pattern", where, &json::is_object, "an object");
  if (pattern.contains("String")) {
    literal_ = need_string(pattern, "String", where.at("pattern"));
    if (literal_.empty()) where.at("pattern").fail("is an empty string");
  } else if (pattern.contains("Regex")) {
    regex_ = std::make_unique<Regex>();
    regex_->re = std::make_unique<SplitRegex>(need_string(pattern, "Regex", where.at("pattern")),
                                              where.at("pattern").path, SplitRegex::Engine::kPcre2);
  } else {
    where.at("pattern").fail("has neither \"String\" nor \"Regex\"");
  }
}

ReplacePattern::~ReplacePattern() = default;

void ReplacePattern::apply(std::string& text) const {
  std::vector<Span> spans;
  if (regex_) {
    regex_->re->find_matches(text, spans);
  } else {
    for (size_t pos = text.find(literal_); pos != std::string::npos; pos = text.find(literal_, pos + literal_.size()))
      spans.push_back(Span{pos, pos + literal_.size()});
  }
  if (spans.empty()) return;
  std::string out;
  out.reserve(text.size());
  size_t prev = 0;
  for (const Span& s : spans) {
    out.append(text, prev, s.begin - prev);
    out += content_;
    prev = s.end;
  }
  out.append(text, prev, std::string::npos);
  text = std::move(out);
}

std::unique_ptr<Normalizer> make_normalizer(const json& node, const Where& where) {
  if (node.is_null()) return nullptr;
  const std::string type = type_of(node, where);
  if (type == "NFC") return std::make_unique<Nfc>();
  if (type == "Prepend") return std::make_unique<Prepend>(need_string(node, "prepend", where));
  if (type == "Replace") return std::make_unique<Replace>(node, where);
  if (type == "Sequence") {
    const json& list = need_array(node, "normalizers", where);
    std::vector<std::unique_ptr<Normalizer>> steps;
    for (size_t i = 0; i < list.size(); ++i) {
      auto step = make_normalizer(list[i], where.at("normalizers").at(i));
      if (step) steps.push_back(std::move(step));
    }
    return std::make_unique<Sequence>(std::move(steps));
  }
  unsupported(where, type, kNormalizers);
}

}  // namespace kiln::data::hf
