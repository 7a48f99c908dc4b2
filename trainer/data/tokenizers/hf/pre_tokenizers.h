// tokenizer.json's "pre_tokenizer": ByteLevel, Split, Metaspace and
// Sequence. A pre-tokenizer cuts a piece of normalized text into the pieces
// the model encodes one by one; pieces it rewrites (a prefix space, "▁" for
// spaces) are kept in an arena that lives as long as the pieces.
//
// ByteLevel's byte -> character mapping is not done here: a tokenizer with
// a ByteLevel pre-tokenizer has a BPE model that reads raw bytes (its vocab
// is translated back from GPT-2's byte alphabet once, at load), so
// ByteLevel must be the last pre-tokenizer.
#pragma once

#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "trainer/data/tokenizers/hf/component_json.h"

namespace kiln::data::hf {

class PieceArena {
 public:
  std::string_view keep(std::string s) { return owned_.emplace_back(std::move(s)); }
  void clear() { owned_.clear(); }

 private:
  std::deque<std::string> owned_;
};

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Appends the pieces of `piece` to out (empty ones dropped). `at_start`:
  // the piece begins the document (Metaspace's prepend_scheme "first").
  virtual void split(std::string_view piece, bool at_start, std::vector<std::string_view>& out,
                     PieceArena& arena) const = 0;
};

struct PreTokenizerOptions {
  bool force_pcre2 = false;  // Split never uses the hand-written scanners (tests)
};

// The pre-tokenizer of `node` (null: none). Sets *byte_level when it ends
// with ByteLevel. Throws kiln::Error naming `where` for an unsupported type.
std::unique_ptr<PreTokenizer> make_pre_tokenizer(const json& node, const Where& where, bool* byte_level,
                                                 const PreTokenizerOptions& options);

}  // namespace kiln::data::hf
