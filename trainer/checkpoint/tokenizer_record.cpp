#include "trainer/checkpoint/tokenizer_record.h"

#include <filesystem>

#include "core/error.h"

namespace kiln::trainer {

namespace {

// Absolute, so `generate` run from another directory finds the files.
std::string absolute(const std::string& path) {
  if (path.empty()) return path;
  std::error_code ec;
  std::filesystem::path p = std::filesystem::absolute(path, ec);
  return ec ? path : p.lexically_normal().string();
}

std::string describe(const nlohmann::json& record) {
  std::string s = record.value("type", std::string("?"));
  for (const char* key : {"tokenizer_model", "vocab_file", "merge_file"})
    if (record.contains(key) && record[key].is_string() && !record[key].get<std::string>().empty())
      (s += ' ') += record[key].get<std::string>();
  return s;
}

}  // namespace

nlohmann::json tokenizer_record_json(const data::TokenizerSpec& spec, const data::Tokenizer& tokenizer) {
  nlohmann::json j = {{"type", spec.type}, {"sha256", tokenizer.sha256()}, {"vocab_size", tokenizer.vocab_size()}};
  if (!spec.vocab_file.empty()) j["vocab_file"] = absolute(spec.vocab_file);
  if (!spec.merge_file.empty()) j["merge_file"] = absolute(spec.merge_file);
  if (!spec.tokenizer_model.empty()) j["tokenizer_model"] = absolute(spec.tokenizer_model);
  if (spec.type == "NullTokenizer") j["null_vocab_size"] = spec.vocab_size;
  return j;
}

data::TokenizerSpec tokenizer_spec_from_record(const nlohmann::json& record, const std::string& checkpoint_dir) {
  auto text = [&](const char* key) {
    if (!record.contains(key)) return std::string();
    if (!record[key].is_string())
      throw Error("checkpoint " + checkpoint_dir + "/meta.json: tokenizer." + key +
                  " is not a string; the checkpoint is corrupt");
    return record[key].get<std::string>();
  };
  data::TokenizerSpec spec;
  spec.type = text("type");
  spec.vocab_file = text("vocab_file");
  spec.merge_file = text("merge_file");
  spec.tokenizer_model = text("tokenizer_model");
  if (record.contains("null_vocab_size")) {
    if (!record["null_vocab_size"].is_number_integer())
      throw Error("checkpoint " + checkpoint_dir +
                  "/meta.json: tokenizer.null_vocab_size is not an integer; the checkpoint is corrupt");
    spec.vocab_size = record["null_vocab_size"].get<int64_t>();
  }
  return spec;
}

void check_same_tokenizer(const nlohmann::json& record, const data::Tokenizer& tokenizer,
                          const std::string& checkpoint_dir) {
  const std::string type = record.value("type", std::string());
  const std::string sha = record.value("sha256", std::string());
  if (type == tokenizer.type() && sha == tokenizer.sha256()) return;
  std::string message = "checkpoint ";
  message += checkpoint_dir;
  message += " was trained with tokenizer ";
  message += describe(record);
  if (record.contains("null_vocab_size")) {
    message += " --vocab-size ";
    message += record["null_vocab_size"].dump();
  }
  message += " (";
  message += record.value("vocab_size", nlohmann::json()).dump();
  message += " tokens, sha256 ";
  message += sha.substr(0, 12);
  message += "), but this run's ";
  message += tokenizer.type();
  message += " has ";
  message += std::to_string(tokenizer.vocab_size());
  message += " tokens, sha256 ";
  message += tokenizer.sha256().substr(0, 12);
  message += "; pass the tokenizer the checkpoint was trained with";
  throw Error(message);
}

}  // namespace kiln::trainer
