// Megatron's --tokenizer-type HuggingFaceTokenizer: a Hugging Face
// tokenizer.json (and the tokenizer_config.json beside it, for the EOS
// token), read from a local file or directory. encode is Hugging Face
// tokenizers' encode with add_special_tokens (what Megatron's
// _HuggingFaceTokenizer.tokenize gets from transformers): added tokens,
// normalizer, pre-tokenizer, BPE model, then the post-processor's special
// tokens (BOS). The rules are in docs/DATA.md.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "trainer/data/tokenizer.h"
#include "trainer/data/tokenizers/hf/added_tokens.h"
#include "trainer/data/tokenizers/hf/post_processor.h"

namespace kiln::data::hf {

class BpeModel;
class Decoder;
class Normalizer;
class PreTokenizer;

struct HfOptions {
  bool force_pcre2 = false;  // Split regexes never use the hand-written scanners (tests compare the two)
};

class HfTokenizer final : public Tokenizer {
 public:
  // `path`: a tokenizer.json file or a directory holding one, with an
  // optional tokenizer_config.json beside it. Throws kiln::Error naming
  // --tokenizer-model for a missing path (with a download hint when it
  // looks like a hub id), malformed JSON or an unsupported component.
  static std::shared_ptr<const HfTokenizer> load(const std::string& path, const HfOptions& options = {});
  // From the files' contents; `config_json` empty when there is no
  // tokenizer_config.json. `name` is used in messages.
  HfTokenizer(std::string_view tokenizer_json, std::string_view config_json, const std::string& name,
              const HfOptions& options = {});
  ~HfTokenizer() override;
  HfTokenizer(const HfTokenizer&) = delete;
  HfTokenizer& operator=(const HfTokenizer&) = delete;

  int64_t vocab_size() const override { return static_cast<int64_t>(id_to_token_.size()); }
  int32_t eod() const override { return eod_; }
  std::string type() const override { return "HuggingFaceTokenizer"; }
  std::string sha256() const override { return sha256_; }
  void encode(std::string_view text, std::vector<int32_t>& out) const override;
  using Tokenizer::encode;
  std::string decode(const int32_t* ids, size_t n) const override;
  using Tokenizer::decode;

 private:
  void encode_segment(std::string_view segment, bool at_start, std::vector<int32_t>& out) const;
  void encode_normalized(std::string_view text, bool at_start, std::vector<int32_t>& out) const;

  std::unique_ptr<Normalizer> normalizer_;
  std::unique_ptr<PreTokenizer> pre_tokenizer_;
  std::unique_ptr<BpeModel> model_;
  std::unique_ptr<Decoder> decoder_;
  std::unique_ptr<AddedTokenMatcher> raw_added_, normalized_added_;
  SpecialTokensAround around_;
  std::vector<std::string> id_to_token_;  // "" where no token has the id
  std::vector<bool> has_token_;
  int32_t eod_ = -1;
  bool clean_up_spaces_ = false;
  std::string sha256_;
};

}  // namespace kiln::data::hf
