// GPT-2's byte-level BPE (Megatron's --tokenizer-type GPT2BPETokenizer).
//
// encode(text): split out literal "<|endoftext|>" (the special token, id
// 50256 in GPT-2's vocab); pre-tokenize each remaining segment with GPT-2's
// pattern
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// (a hand-written scanner over generated Unicode tables, see DATA.md for why
// not PCRE2); map each piece's bytes to byte tokens and apply the ranked
// merges (all occurrences of the lowest-ranked pair per round, as GPT-2's
// encoder.py). Pieces already seen on this thread come from a bounded cache.
//
// A tokenizer is immutable after load and safe to share between threads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "trainer/data/tokenizer.h"

namespace kiln::data {

class Gpt2Tokenizer final : public Tokenizer {
 public:
  // Reads GPT-2's vocab.json and merges.txt; throws kiln::Error naming the
  // file (and line) for anything malformed, including a merges file that
  // does not belong to the vocab.
  static std::shared_ptr<const Gpt2Tokenizer> load(const std::string& vocab_file, const std::string& merge_file);
  // The same from the files' contents (names are only used in messages).
  Gpt2Tokenizer(std::string_view vocab_json, std::string_view merges_txt, const std::string& vocab_name = "vocab",
                const std::string& merges_name = "merges");
  ~Gpt2Tokenizer() override;
  Gpt2Tokenizer(const Gpt2Tokenizer&) = delete;
  Gpt2Tokenizer& operator=(const Gpt2Tokenizer&) = delete;

  int64_t vocab_size() const override { return static_cast<int64_t>(token_bytes_.size()); }
  int32_t eod() const override { return eod_; }
  std::string type() const override { return "GPT2BPETokenizer"; }
  std::string sha256() const override { return sha256_; }

  // Appends the ids of text to out. Throws kiln::Error on invalid UTF-8.
  void encode(std::string_view text, std::vector<int32_t>& out) const override;
  using Tokenizer::encode;
  // The bytes of the ids, concatenated; throws on an id outside the vocab.
  std::string decode(const int32_t* ids, size_t n) const override;
  using Tokenizer::decode;

  // The pieces of GPT-2's pre-tokenization of text (no special tokens
  // handled), in order; they concatenate to text. Throws on invalid UTF-8.
  static void pretokenize(std::string_view text, std::vector<std::string_view>& pieces);
  // Merges of one piece, without the cache; heap = the O(n log n) variant
  // used for long pieces (exposed so tests can compare the two).
  void bpe(std::string_view piece, std::vector<int32_t>& out, bool heap) const;

  // Index of the first byte of text that is not valid UTF-8, or npos.
  static size_t invalid_utf8_at(std::string_view text);

 private:
  struct PairTable;
  void encode_segment(std::string_view text, std::vector<int32_t>& out) const;
  void bpe_small(const uint8_t* p, size_t n, std::vector<int32_t>& out) const;
  void bpe_heap(const uint8_t* p, size_t n, std::vector<int32_t>& out) const;
  // (rank, merged id) of the pair, or rank -1.
  inline int64_t lookup(int32_t a, int32_t b, int32_t* merged) const;

  std::vector<std::string> token_bytes_;  // id -> raw bytes
  int32_t byte_token_[256];
  int32_t eod_ = -1;
  std::unique_ptr<PairTable> pairs_;
  std::string sha256_;  // of vocab.json and merges.txt
  uint64_t serial_;     // identifies this tokenizer to the thread-local caches
};

}  // namespace kiln::data
