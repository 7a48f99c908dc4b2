// tokenizer.json's "decoder": ByteLevel, ByteFallback, Metaspace, Replace,
// Fuse, Strip and Sequence, each Hugging Face's decode_chain over the
// tokens' strings; decode joins what the chain leaves.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "trainer/data/tokenizers/hf/component_json.h"

namespace kiln::data::hf {

class Decoder {
 public:
  virtual ~Decoder() = default;
  virtual void decode_chain(std::vector<std::string>& tokens) const = 0;
};

// The decoder of `node` (null: none, and decode joins tokens with spaces as
// Hugging Face does). Throws kiln::Error naming `where` for an unsupported type.
std::unique_ptr<Decoder> make_decoder(const json& node, const Where& where);

// Invalid UTF-8 in s replaced as Rust's String::from_utf8_lossy does: each
// maximal invalid subsequence becomes one U+FFFD.
std::string utf8_lossy(const std::string& s);

}  // namespace kiln::data::hf
