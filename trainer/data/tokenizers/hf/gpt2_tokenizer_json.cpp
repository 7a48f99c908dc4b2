#include "trainer/data/tokenizers/hf/gpt2_tokenizer_json.h"

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace kiln::data::hf {

std::string gpt2_tokenizer_json(std::string_view vocab_json, std::string_view merges_txt) {
  using nlohmann::json;
  json vocab = json::parse(vocab_json, nullptr, false);
  if (!vocab.is_object() || !vocab.contains("<|endoftext|>"))
    throw Error("GPT-2 vocab.json is not a JSON object with <|endoftext|>");
  json merges = json::array();
  for (size_t pos = 0; pos < merges_txt.size();) {
    size_t eol = merges_txt.find('\n', pos);
    if (eol == std::string_view::npos) eol = merges_txt.size();
    std::string_view line = merges_txt.substr(pos, eol - pos);
    pos = eol + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || line.rfind("#version", 0) == 0) continue;
    merges.push_back(std::string(line));
  }
  auto byte_level = [](bool add_prefix_space, bool trim_offsets) {
    return json{{"type", "ByteLevel"},
                {"add_prefix_space", add_prefix_space},
                {"trim_offsets", trim_offsets},
                {"use_regex", true}};
  };
  json added = {{"id", vocab["<|endoftext|>"]},
                {"content", "<|endoftext|>"},
                {"single_word", false},
                {"lstrip", false},
                {"rstrip", false},
                {"normalized", true},
                {"special", true}};
  json model = {{"type", "BPE"},
                {"dropout", nullptr},
                {"unk_token", nullptr},
                {"continuing_subword_prefix", ""},
                {"end_of_word_suffix", ""},
                {"fuse_unk", false},
                {"byte_fallback", false},
                {"vocab", vocab},
                {"merges", merges}};
  json t = {{"version", "1.0"},
            {"truncation", nullptr},
            {"padding", nullptr},
            {"added_tokens", json::array({added})},
            {"normalizer", nullptr},
            {"pre_tokenizer", byte_level(false, true)},
            {"post_processor", byte_level(true, false)},
            {"decoder", byte_level(true, true)},
            {"model", model}};
  return t.dump();
}

}  // namespace kiln::data::hf
