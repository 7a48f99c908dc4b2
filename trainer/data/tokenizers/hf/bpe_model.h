// tokenizer.json's "model" of type BPE: vocab, merges (as "a b" strings or
// ["a", "b"] pairs), byte_fallback, ignore_merges, unk_token and fuse_unk,
// with Hugging Face's merge order (lowest rank first, leftmost first among
// equals). dropout, continuing_subword_prefix and end_of_word_suffix are
// refused.
//
// With a ByteLevel pre-tokenizer (byte_level) the model reads raw bytes: the
// vocab's GPT-2-alphabet spellings are turned back into bytes at load, and
// a piece starts as one symbol per byte. Otherwise a piece starts as one
// symbol per character.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "trainer/data/tokenizers/hf/component_json.h"

namespace kiln::data::hf {

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using TokenIds = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

class BpeModel {
 public:
  BpeModel(const json& node, const Where& where, bool byte_level);
  ~BpeModel();
  BpeModel(const BpeModel&) = delete;
  BpeModel& operator=(const BpeModel&) = delete;

  // Appends the ids of one pre-tokenized piece.
  void tokenize(std::string_view piece, std::vector<int32_t>& out) const;
  // The vocab as tokenizer.json spells it: token -> id.
  const TokenIds& vocab() const { return vocab_; }

 private:
  struct PairTable;
  void merge(std::vector<int32_t>& symbols) const;
  void initial_symbols(std::string_view piece, std::vector<int32_t>& symbols) const;
  void tokenize_uncached(std::string_view piece, std::vector<int32_t>& out) const;

  bool byte_level_;
  bool byte_fallback_ = false, ignore_merges_ = false, fuse_unk_ = false;
  int32_t unk_id_ = -1;
  TokenIds vocab_;               // as spelled in tokenizer.json
  TokenIds model_keys_;          // what pieces are matched against: raw bytes when byte_level, else vocab_
  int32_t byte_token_[256];      // byte_level: the token of each byte (-1: none)
  int32_t fallback_token_[256];  // byte_fallback: <0xXX> (-1: none)
  std::unique_ptr<PairTable> pairs_;
  uint64_t serial_;  // identifies this model to the thread-local piece caches
};

}  // namespace kiln::data::hf
