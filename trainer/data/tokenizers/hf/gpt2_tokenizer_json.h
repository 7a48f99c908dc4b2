// The Hugging Face tokenizer.json equivalent of GPT-2's vocab.json and
// merges.txt (ByteLevel pre-tokenizer and decoder, BPE, <|endoftext|> as an
// added special token), as transformers' GPT2TokenizerFast has it. Tests and
// the benchmark use it to check HuggingFaceTokenizer against
// GPT2BPETokenizer on the same vocabulary.
#pragma once

#include <string>
#include <string_view>

namespace kiln::data::hf {

// Throws kiln::Error when the vocab is not a JSON object with <|endoftext|>.
std::string gpt2_tokenizer_json(std::string_view vocab_json, std::string_view merges_txt);

}  // namespace kiln::data::hf
