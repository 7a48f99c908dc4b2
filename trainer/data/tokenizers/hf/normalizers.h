// tokenizer.json's "normalizer": NFC, Prepend, Replace (String or Regex
// pattern) and Sequence, applied to the text between added tokens before
// pre-tokenization (and to the content of added tokens with "normalized").
#pragma once

#include <memory>
#include <string>

#include "trainer/data/tokenizers/hf/component_json.h"

namespace kiln::data::hf {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  virtual void normalize(std::string& text) const = 0;
};

// The normalizer of `node` (null: none); throws kiln::Error naming `where`
// for a type kiln does not implement or a malformed field.
std::unique_ptr<Normalizer> make_normalizer(const json& node, const Where& where);

// Hugging Face's Replace: every non-overlapping match of a String or Regex
// pattern becomes `content` (the normalizer and the decoder share it).
class ReplacePattern {
 public:
  ReplacePattern(const json& node, const Where& where);
  ~ReplacePattern();
  ReplacePattern(const ReplacePattern&) = delete;
  ReplacePattern& operator=(const ReplacePattern&) = delete;
  void apply(std::string& text) const;

 private:
  std::string literal_, content_;
  struct Regex;
  std::unique_ptr<Regex> regex_;
};

}  // namespace kiln::data::hf
