// The tokenizer seen by the data pipeline, training and generation: what
// Megatron-LM's MegatronTokenizer gives preprocess_data.py and the trainer.
// One implementation per --tokenizer-type (trainer/data/tokenizers/), made
// by load_tokenizer from the same flags Megatron takes.
//
// A tokenizer is immutable after load and safe to share between threads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::data {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Megatron's tokenizer.vocab_size: the ids encode can produce, before the
  // trainer pads it to --make-vocab-size-divisible-by.
  virtual int64_t vocab_size() const = 0;
  // Megatron's tokenizer.eod: what --append-eod appends after a document.
  virtual int32_t eod() const = 0;
  // Megatron's tokenizer.tokenize(text): the ids preprocess_data.py writes
  // for one document, special tokens (BOS) included where that tokenizer
  // adds them. Appends to out. Throws kiln::Error on text it cannot encode
  // (invalid UTF-8, a non-integer for NullTokenizer).
  virtual void encode(std::string_view text, std::vector<int32_t>& out) const = 0;
  // Megatron's tokenizer.detokenize(ids). Throws on an id outside the vocab.
  virtual std::string decode(const int32_t* ids, size_t n) const = 0;
  // The --tokenizer-type this is, and the SHA-256 (hex) of what defines it
  // (the files it was loaded from, as read; see content_sha256 below), which
  // a checkpoint records so that a resumed run or `generate` given another
  // tokenizer finds out.
  virtual std::string type() const = 0;
  virtual std::string sha256() const = 0;

  std::vector<int32_t> encode(std::string_view text) const {
    std::vector<int32_t> ids;
    encode(text, ids);
    return ids;
  }
  std::string decode(const std::vector<int32_t>& ids) const { return decode(ids.data(), ids.size()); }
};

// Megatron's tokenizer flags, as both `kiln preprocess` and `kiln train` take them.
struct TokenizerSpec {
  std::string type;             // --tokenizer-type
  std::string vocab_file;       // --vocab-file (GPT2BPETokenizer)
  std::string merge_file;       // --merge-file (GPT2BPETokenizer)
  std::string tokenizer_model;  // --tokenizer-model (HuggingFaceTokenizer, *SentencePiece*, Llama2Tokenizer)
  int64_t vocab_size = 0;       // --vocab-size (NullTokenizer)
};

// The --tokenizer-type values kiln has, for messages.
extern const char* const kTokenizerTypes;

// A --vocab-file with a --merge-file and no --tokenizer-type: Megatron's
// pretrain_gpt.py defaults the type to GPT2BPETokenizer, and real launch
// scripts rely on it. A vocab plus merges pair is GPT-2 BPE and nothing
// else (the other types take --tokenizer-model or --vocab-size), so the
// type is set to it, with one info line saying so. Returns whether it did.
bool infer_tokenizer_type(TokenizerSpec& spec);

// Loads the tokenizer the flags name. Throws kiln::Error, in one line
// naming the flag and the fix, for an unknown type, a missing flag, or a
// file that is missing or malformed.
std::shared_ptr<const Tokenizer> load_tokenizer(const TokenizerSpec& spec);

// The SHA-256 (hex) of a tokenizer's defining files, in order, each
// prefixed by its length so that two files cannot trade bytes and hash the
// same. Implementations call it on the bytes they loaded.
std::string content_sha256(const std::vector<std::string_view>& files);

// A tokenizer file read whole, for the implementations: a missing,
// unreadable or special file (a FIFO, a directory) throws kiln::Error
// naming `flag` (e.g. "--tokenizer-model") and the path.
std::string read_tokenizer_file(const std::string& path, const std::string& flag);

}  // namespace kiln::data
