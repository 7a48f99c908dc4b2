#include "trainer/data/tokenizer.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"
#include "core/hash.h"
#include "core/log.h"
#include "core/regular_file.h"
#include "trainer/data/gpt2_tokenizer.h"
#include "trainer/data/tokenizers/hf/hf_tokenizer.h"
#include "trainer/data/tokenizers/null_tokenizer.h"
#include "trainer/data/tokenizers/sentencepiece_tokenizer.h"

namespace kiln::data {

const char* const kTokenizerTypes =
    "GPT2BPETokenizer, NullTokenizer, Llama2Tokenizer, GPTSentencePieceTokenizer, SentencePieceTokenizer, "
    "HuggingFaceTokenizer";

namespace {

void require(const std::string& value, const std::string& type, const char* flag, const char* what) {
  if (value.empty()) throw Error("--tokenizer-type " + type + " needs " + flag + " (" + what + ")");
}

// "--flag PATH: what", built in place (no chain of temporaries).
Error file_error(const std::string& flag, const std::string& path, const std::string& what) {
  std::string message = flag;
  message += ' ';
  message += path;
  message += ": ";
  message += what;
  return Error(message);
}

}  // namespace

std::string read_tokenizer_file(const std::string& path, const std::string& flag) {
  constexpr uint64_t kMaxBytes = uint64_t{1} << 31;  // tokenizer files are MBs; 2 GiB is a wrong path
  RegularFile f = open_regular_file(path, kMaxBytes);
  if (f.fd < 0) throw file_error(flag, path, f.problem);
  std::string bytes(f.size, '\0');
  size_t got = 0;
  while (got < bytes.size()) {
    ssize_t n = ::read(f.fd, bytes.data() + got, bytes.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      std::string why = n < 0 ? std::strerror(errno) : "the file shrank while read";
      ::close(f.fd);
      throw file_error(flag, path, "cannot read (" + why + ")");
    }
    got += static_cast<size_t>(n);
  }
  ::close(f.fd);
  return bytes;
}

bool infer_tokenizer_type(TokenizerSpec& spec) {
  if (!spec.type.empty() || spec.vocab_file.empty() || spec.merge_file.empty() || !spec.tokenizer_model.empty())
    return false;
  spec.type = "GPT2BPETokenizer";
  logger().info(
      "--tokenizer-type not given: using GPT2BPETokenizer, the only tokenizer that takes --vocab-file with "
      "--merge-file (Megatron's pretrain_gpt.py default)");
  return true;
}

std::shared_ptr<const Tokenizer> load_tokenizer(const TokenizerSpec& spec) {
  const std::string& type = spec.type;
  if (type.empty()) throw Error(std::string("--tokenizer-type is required (kiln has ") + kTokenizerTypes + ")");
  if (type == "GPT2BPETokenizer") {
    require(spec.vocab_file, type, "--vocab-file", "gpt2-vocab.json");
    require(spec.merge_file, type, "--merge-file", "gpt2-merges.txt");
    return Gpt2Tokenizer::load(spec.vocab_file, spec.merge_file);
  }
  if (type == "NullTokenizer") {
    if (spec.vocab_size <= 0)
      throw Error("--tokenizer-type NullTokenizer needs --vocab-size N (ids 0..N-1, with EOD = N as Megatron)");
    return std::make_shared<const NullTokenizer>(spec.vocab_size);
  }
  for (auto wrapper : {SentencePieceTokenizer::Wrapper::kLlama2, SentencePieceTokenizer::Wrapper::kGpt,
                       SentencePieceTokenizer::Wrapper::kPlain}) {
    if (type != SentencePieceTokenizer::type_name(wrapper)) continue;
    require(spec.tokenizer_model, type, "--tokenizer-model", "a SentencePiece tokenizer.model");
    return SentencePieceTokenizer::load(spec.tokenizer_model, wrapper);
  }
  if (type == "HuggingFaceTokenizer") {
    require(spec.tokenizer_model, type, "--tokenizer-model", "a tokenizer.json or a directory holding one");
    return hf::HfTokenizer::load(spec.tokenizer_model);
  }
  throw Error("--tokenizer-type " + type + " is not supported; kiln has " + kTokenizerTypes);
}

std::string content_sha256(const std::vector<std::string_view>& files) {
  std::string defining;
  for (std::string_view bytes : files) {
    defining += std::to_string(bytes.size());
    defining += ':';
    defining += bytes;
  }
  return sha256_hex(defining.data(), defining.size());
}

}  // namespace kiln::data
