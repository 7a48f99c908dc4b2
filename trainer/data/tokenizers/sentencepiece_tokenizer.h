// Megatron-LM's SentencePiece tokenizers (--tokenizer-model tokenizer.model),
// on Debian's libsentencepiece, loaded from the bytes that sha256() hashes.
// Megatron wraps the same library three ways (megatron/training/tokenizer/
// tokenizer.py); kiln matches each (docs/DATA.md, "SentencePiece"):
//
//   GPTSentencePieceTokenizer  tokenize = the library's ids, nothing added;
//                              eod = the model's EOS; vocab = its pieces.
//   Llama2Tokenizer            tokenize = BOS + the library's ids (Megatron's
//                              tokenize(s, bos=True, eos=False));
//                              eod = EOS; vocab = the pieces.
//   SentencePieceTokenizer     <CLS> <SEP> <EOD> <MASK> and the model's pad,
//                              bos and eos pieces (<PAD> <BOS> <EOS> where it
//                              has none) are special: the new ones get ids
//                              after the pieces, each is split out of the
//                              text where it occurs, and decodes between
//                              spaces; eod = <EOD>.
//
// Text in the model's own syntax (the literal "<s>") is plain text to the
// first two, as it is to the library.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "trainer/data/tokenizer.h"

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace kiln::data {

class SentencePieceTokenizer final : public Tokenizer {
 public:
  enum class Wrapper { kGpt, kLlama2, kPlain };

  // The --tokenizer-type names of the wrappers.
  static const char* type_name(Wrapper wrapper);

  // Reads and parses path. Throws kiln::Error, in one line naming
  // --tokenizer-model and the path, for a file that is missing, unreadable
  // or not a SentencePiece model, and for a model without the EOS (and for
  // Llama2Tokenizer the BOS) piece the wrapper needs.
  static std::shared_ptr<const SentencePieceTokenizer> load(const std::string& path, Wrapper wrapper);

  ~SentencePieceTokenizer() override;

  int64_t vocab_size() const override { return vocab_size_; }
  int32_t eod() const override { return eod_; }
  // The BOS id Llama2Tokenizer puts first (Megatron's tokenizer.bos).
  int32_t bos() const { return bos_; }
  std::string type() const override { return type_name(wrapper_); }
  std::string sha256() const override { return sha256_; }

  // Throws kiln::Error on invalid UTF-8 (Python's str cannot hold it).
  void encode(std::string_view text, std::vector<int32_t>& out) const override;
  using Tokenizer::encode;
  // Throws kiln::Error on an id outside 0..vocab_size-1.
  std::string decode(const int32_t* ids, size_t n) const override;
  using Tokenizer::decode;

 private:
  SentencePieceTokenizer(std::unique_ptr<sentencepiece::SentencePieceProcessor> processor, Wrapper wrapper,
                         const std::string& path, std::string sha256);
  void add_special(const std::string& piece);
  void encode_pieces(std::string_view text, std::vector<int32_t>& out) const;
  void decode_pieces(const int32_t* ids, size_t n, std::string& out) const;
  const std::string* special_piece(int32_t id) const;

  // Const after load: SentencePieceProcessor::Encode and Decode are const
  // and, in 0.1.97 (src/sentencepiece_processor.cc, bpe_model.cc,
  // unigram_model.cc), keep their working state (the normalised string, the
  // BPE agenda, the unigram lattice) in locals: no mutable members, no
  // caches, no shared random state outside the sampling calls kiln does not
  // make. Encoding from several preprocess workers at once is therefore safe
  // without a lock (tests/unit/test_data_sentencepiece.cpp checks it).
  std::unique_ptr<sentencepiece::SentencePieceProcessor> processor_;
  Wrapper wrapper_;
  int32_t pieces_ = 0;  // the model's piece count
  int64_t vocab_size_ = 0;
  int32_t eod_ = -1;
  int32_t bos_ = -1;
  std::string sha256_;
  // kPlain: the special pieces with their ids, in Megatron's order (the
  // first listed wins when two start at the same place).
  std::vector<std::pair<std::string, int32_t>> specials_;
};

}  // namespace kiln::data
