#include "trainer/data/tokenizers/hf/hf_tokenizer.h"

#include <cctype>
#include <filesystem>

#include "core/error.h"
#include "trainer/data/gpt2_tokenizer.h"
#include "trainer/data/tokenizers/hf/bpe_model.h"
#include "trainer/data/tokenizers/hf/decoders.h"
#include "trainer/data/tokenizers/hf/normalizers.h"
#include "trainer/data/tokenizers/hf/pre_tokenizers.h"

namespace kiln::data::hf {

namespace fs = std::filesystem;

namespace {

constexpr const char* kFlag = "--tokenizer-model";

// "org/name": what a Hugging Face hub id looks like.
bool looks_like_hub_id(const std::string& path) {
  size_t slash = path.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 >= path.size() ||
      path.find('/', slash + 1) != std::string::npos)
    return false;
  if (path[0] == '.' || path[0] == '~') return false;
  for (char c : path)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '/' || c == '-' || c == '_' || c == '.')) return false;
  return true;
}

json parse_json(std::string_view bytes, const std::string& name) {
  try {
    return json::parse(bytes);
  } catch (const json::exception& e) {
    throw Error(name + " is not valid JSON (" + e.what() + ")");
  }
}

// A token named in tokenizer_config.json: a string or {"content": ...}.
std::string config_token(const json& value, const std::string& name, const char* key) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_object() && value.contains("content") && value["content"].is_string())
    return value["content"].get<std::string>();
  throw Error(name + ": \"" + key + "\" is neither a string nor {\"content\": ...}");
}

// The EOS names kiln recognizes in a tokenizer.json without a tokenizer_config.json.
constexpr const char* kConventionalEos[] = {"<|endoftext|>", "<|end_of_text|>", "</s>", "<eos>"};

}  // namespace

std::shared_ptr<const HfTokenizer> HfTokenizer::load(const std::string& path, const HfOptions& options) {
  std::error_code ec;
  if (!fs::exists(path, ec)) {
    if (looks_like_hub_id(path))
      throw Error(std::string(kFlag) + " " + path +
                  " does not exist here and looks like a Hugging Face hub id; kiln is offline: download the tokenizer "
                  "files (e.g. `huggingface-cli download " +
                  path + " tokenizer.json tokenizer_config.json --local-dir DIR`) and pass the local path");
    throw Error(std::string(kFlag) + " " + path + " does not exist (pass a tokenizer.json or a directory holding one)");
  }
  fs::path file = path;
  if (fs::is_directory(file, ec)) {
    file /= "tokenizer.json";
    if (!fs::exists(file, ec))
      throw Error(std::string(kFlag) + " " + path +
                  " is a directory without tokenizer.json (kiln reads Hugging Face's tokenizer.json)");
  }
  std::string tokenizer_json = read_tokenizer_file(file.string(), kFlag);
  fs::path config = file.parent_path() / "tokenizer_config.json";
  std::string config_json;
  if (fs::exists(config, ec)) config_json = read_tokenizer_file(config.string(), kFlag);
  return std::make_shared<const HfTokenizer>(tokenizer_json, config_json, file.string(), options);
}

HfTokenizer::HfTokenizer(std::string_view tokenizer_json, std::string_view config_json, const std::string& name,
                         const HfOptions& options) {
  sha256_ = config_json.empty() ? content_sha256({tokenizer_json}) : content_sha256({tokenizer_json, config_json});
  const json root = parse_json(tokenizer_json, name);
  if (!root.is_object()) throw Error(name + " is not a JSON object; pass a Hugging Face tokenizer.json");
  auto part = [&](const char* key) -> const json& {
    static const json null_json;
    auto it = root.find(key);
    return it == root.end() ? null_json : *it;
  };
  auto where = [&](const char* key) { return Where{name + ": " + key}; };

  const json& model = part("model");
  if (model.is_null()) throw Error(name + " has no \"model\"; pass a Hugging Face tokenizer.json");
  normalizer_ = make_normalizer(part("normalizer"), where("normalizer"));
  bool byte_level = false;
  pre_tokenizer_ = make_pre_tokenizer(part("pre_tokenizer"), where("pre_tokenizer"), &byte_level,
                                      PreTokenizerOptions{options.force_pcre2});
  const std::string model_type = type_of(model, where("model"));
  if (model_type != "BPE") unsupported(where("model"), model_type, "BPE");
  model_ = std::make_unique<BpeModel>(model, where("model"), byte_level);
  decoder_ = make_decoder(part("decoder"), where("decoder"));
  around_ = make_post_processor(part("post_processor"), where("post_processor"));

  // The vocab: the model's tokens, then the added tokens (which may reuse
  // or extend the model's ids).
  // The id table has a slot per id up to the largest: one id of 2^28 cost
  // 8.4 GB. Ids are dense in real tokenizers (0 .. entries - 1, added tokens
  // at most a little beyond), so an id far above the entry count is refused.
  const json& added = part("added_tokens");
  const size_t entries = model_->vocab().size() + (added.is_array() ? added.size() : 0);
  const size_t max_id = 2 * entries + 65536;
  auto set_token = [&](int32_t id, const std::string& token, const std::string& where_from) {
    if (static_cast<size_t>(id) > max_id)
      throw Error(name + ": " + where_from + " gives '" + token + "' id " + std::to_string(id) + ", far beyond its " +
                  std::to_string(entries) +
                  " tokens (kiln takes ids up to 2 x tokens + 65536 = " + std::to_string(max_id) + "); fix the id");
    if (static_cast<size_t>(id) >= id_to_token_.size()) {
      id_to_token_.resize(static_cast<size_t>(id) + 1);
      has_token_.resize(static_cast<size_t>(id) + 1, false);
    }
    id_to_token_[static_cast<size_t>(id)] = token;
    has_token_[static_cast<size_t>(id)] = true;
  };
  for (const auto& [token, id] : model_->vocab()) set_token(id, token, "model.vocab");
  std::vector<AddedToken> raw, normalized;
  TokenIds added_ids;
  if (!added.is_null() && !added.is_array()) where("added_tokens").fail("is not an array");
  for (size_t i = 0; i < added.size(); ++i) {
    const Where w = where("added_tokens").at(i);
    const json& a = added[i];
    const json& id = need(a, "id", w, &json::is_number_unsigned, "a non-negative integer");
    if (id.get<uint64_t>() > INT32_MAX) w.at("id").fail("is too large");
    AddedToken t{static_cast<int32_t>(id.get<uint64_t>()), need_string(a, "content", w),
                 opt_bool(a, "special", w, false),         opt_bool(a, "single_word", w, false),
                 opt_bool(a, "lstrip", w, false),          opt_bool(a, "rstrip", w, false),
                 opt_bool(a, "normalized", w, true)};
    set_token(t.id, t.content, "added_tokens[" + std::to_string(i) + "]");
    added_ids[t.content] = t.id;
    if (t.normalized) {
      if (normalizer_) normalizer_->normalize(t.content);
      normalized.push_back(std::move(t));
    } else {
      raw.push_back(std::move(t));
    }
  }
  raw_added_ = std::make_unique<AddedTokenMatcher>(std::move(raw));
  normalized_added_ = std::make_unique<AddedTokenMatcher>(std::move(normalized));
  for (int32_t id : around_.before)
    if (static_cast<size_t>(id) >= id_to_token_.size() || !has_token_[static_cast<size_t>(id)])
      where("post_processor").fail("adds id " + std::to_string(id) + ", which no token has");
  for (int32_t id : around_.after)
    if (static_cast<size_t>(id) >= id_to_token_.size() || !has_token_[static_cast<size_t>(id)])
      where("post_processor").fail("adds id " + std::to_string(id) + ", which no token has");

  auto id_of = [&](const std::string& token) -> int32_t {
    auto a = added_ids.find(token);
    if (a != added_ids.end()) return a->second;
    auto m = model_->vocab().find(token);
    return m == model_->vocab().end() ? -1 : m->second;
  };
  // EOD: transformers' eos_token_id, from tokenizer_config.json.
  const std::string config_name = (fs::path(name).parent_path() / "tokenizer_config.json").string();
  if (!config_json.empty()) {
    const json config = parse_json(config_json, config_name);
    if (!config.is_object()) throw Error(config_name + " is not a JSON object");
    auto eos = config.find("eos_token");
    if (eos == config.end() || eos->is_null())
      throw Error(config_name +
                  " names no eos_token, so the tokenizer has no EOD (Megatron's eod would be None); "
                  "add \"eos_token\" to it");
    std::string eos_token = config_token(*eos, config_name, "eos_token");
    eod_ = id_of(eos_token);
    if (eod_ < 0) throw Error(config_name + ": eos_token '" + eos_token + "' is not a token of " + name);
    auto clean = config.find("clean_up_tokenization_spaces");
    clean_up_spaces_ = clean != config.end() && clean->is_boolean() && clean->get<bool>();
  } else {
    std::string found;
    for (size_t i = 0; i < added.size(); ++i) {
      const json& a = added[i];
      if (!opt_bool(a, "special", Where{}, false)) continue;
      std::string content = a["content"].get<std::string>();
      for (const char* eos : kConventionalEos) {
        if (content != eos) continue;
        if (!found.empty())
          throw Error(std::string(name)
                          .append(" has no tokenizer_config.json beside it and both '")
                          .append(found)
                          .append("' and '")
                          .append(content)
                          .append("' could be its EOS; put a tokenizer_config.json with \"eos_token\" beside it"));
        found = content;
      }
    }
    if (found.empty())
      throw Error(name +
                  " has no tokenizer_config.json beside it and no special token named <|endoftext|>, "
                  "<|end_of_text|>, </s> or <eos> to take as EOD; put a tokenizer_config.json with \"eos_token\" "
                  "beside it");
    eod_ = id_of(found);
  }
}

HfTokenizer::~HfTokenizer() = default;

void HfTokenizer::encode(std::string_view text, std::vector<int32_t>& out) const {
  if (size_t bad = Gpt2Tokenizer::invalid_utf8_at(text); bad != std::string_view::npos)
    throw Error("text is not valid UTF-8 (byte " + std::to_string(bad) + ")");
  out.insert(out.end(), around_.before.begin(), around_.before.end());
  raw_added_->split(
      text, [&](std::string_view segment) { encode_segment(segment, segment.data() == text.data(), out); },
      [&](int32_t id) { out.push_back(id); });
  out.insert(out.end(), around_.after.begin(), around_.after.end());
}

// Text between raw-matched added tokens: normalized, then cut at the
// normalized added tokens.
void HfTokenizer::encode_segment(std::string_view segment, bool at_start, std::vector<int32_t>& out) const {
  auto each = [&](std::string_view whole) {
    normalized_added_->split(
        whole, [&](std::string_view piece) { encode_normalized(piece, at_start && piece.data() == whole.data(), out); },
        [&](int32_t id) { out.push_back(id); });
  };
  if (!normalizer_) {
    each(segment);
    return;
  }
  std::string normalized(segment);
  normalizer_->normalize(normalized);
  each(normalized);
}

void HfTokenizer::encode_normalized(std::string_view text, bool at_start, std::vector<int32_t>& out) const {
  if (!pre_tokenizer_) {
    model_->tokenize(text, out);
    return;
  }
  // Reused between calls: a document can have a million pieces.
  thread_local std::vector<std::string_view> pieces;
  thread_local PieceArena arena;
  pieces.clear();
  arena.clear();
  pre_tokenizer_->split(text, at_start, pieces, arena);
  for (std::string_view piece : pieces) model_->tokenize(piece, out);
}

std::string HfTokenizer::decode(const int32_t* ids, size_t n) const {
  std::vector<std::string> tokens;
  tokens.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    if (ids[i] < 0 || static_cast<size_t>(ids[i]) >= id_to_token_.size() || !has_token_[static_cast<size_t>(ids[i])])
      throw Error("token id " + std::to_string(ids[i]) + " is outside the vocabulary (0.." +
                  std::to_string(id_to_token_.size() - 1) + ")");
    tokens.push_back(id_to_token_[static_cast<size_t>(ids[i])]);
  }
  std::string text;
  if (decoder_) {
    decoder_->decode_chain(tokens);
    for (const std::string& t : tokens) text += t;
  } else {
    for (size_t i = 0; i < tokens.size(); ++i) {
      if (i) text += ' ';
      text += tokens[i];
    }
  }
  if (clean_up_spaces_) {
    // transformers' clean_up_tokenization, when tokenizer_config.json asks for it.
    static const std::pair<std::string_view, std::string_view> kCleanUps[] = {
        {" .", "."},     {" ?", "?"},   {" !", "!"},   {" ,", ","},     {" ' ", "'"},
        {" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
    for (const auto& [from, to] : kCleanUps) {
      std::string next;
      size_t prev = 0;
      for (size_t pos = text.find(from); pos != std::string::npos; pos = text.find(from, prev)) {
        next.append(text, prev, pos - prev);
        next += to;
        prev = pos + from.size();
      }
      next.append(text, prev, std::string::npos);
      text = std::move(next);
    }
  }
  return text;
}

}  // namespace kiln::data::hf
