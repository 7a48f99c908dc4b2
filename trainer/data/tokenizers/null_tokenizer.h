// Megatron's NullTokenizer (--tokenizer-type NullTokenizer --vocab-size N),
// for data that is already token ids: a document is its ids written as
// decimal integers separated by single spaces ("12 7 3"), as in Megatron's
// `[int(x) for x in text.split(' ')]`. The vocab is N + 1 ids: 0..N-1 and
// EOD = N, so --append-eod writes N.
#pragma once

#include "trainer/data/tokenizer.h"

namespace kiln::data {

class NullTokenizer final : public Tokenizer {
 public:
  explicit NullTokenizer(int64_t vocab_size);

  int64_t vocab_size() const override { return vocab_size_ + 1; }
  int32_t eod() const override { return static_cast<int32_t>(vocab_size_); }
  std::string type() const override { return "NullTokenizer"; }
  std::string sha256() const override { return sha256_; }

  // Throws kiln::Error naming the field for anything Python's int() would
  // refuse after split(' ') (an empty field from two spaces, a non-digit),
  // and for an id outside 0..N, which Megatron would write unchecked.
  void encode(std::string_view text, std::vector<int32_t>& out) const override;
  using Tokenizer::encode;
  // The ids in decimal, joined by single spaces.
  std::string decode(const int32_t* ids, size_t n) const override;
  using Tokenizer::decode;

 private:
  int64_t vocab_size_;  // N, without EOD
  std::string sha256_;
};

}  // namespace kiln::data
