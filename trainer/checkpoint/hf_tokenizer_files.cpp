#include "trainer/checkpoint/hf_tokenizer_files.h"

#include <filesystem>

#include "core/error.h"
#include "trainer/checkpoint/tokenizer_record.h"
#include "trainer/data/tokenizer.h"

namespace kiln::trainer {

namespace fs = std::filesystem;

std::map<std::string, std::string> hf_tokenizer_files(const nlohmann::json& meta, const std::string& checkpoint_dir,
                                                      int64_t model_max_length) {
  std::map<std::string, std::string> files;
  if (!meta.contains("tokenizer")) return files;  // a byte-level model
  const nlohmann::json& record = meta["tokenizer"];
  const data::TokenizerSpec spec = tokenizer_spec_from_record(record, checkpoint_dir);
  if (spec.type == "NullTokenizer") return files;
  // Loading checks the files are there and well-formed; the hash, that
  // they are the ones the model was trained with.
  std::shared_ptr<const data::Tokenizer> tokenizer;
  try {
    tokenizer = data::load_tokenizer(spec);
    check_same_tokenizer(record, *tokenizer, checkpoint_dir);
  } catch (const Error& e) {
    std::string message = "the tokenizer checkpoint ";
    message += checkpoint_dir;
    message += " records cannot be exported: ";
    message += e.what();
    message += " (pass --skip-tokenizer to export the model alone)";
    throw Error(message);
  }
  if (spec.type == "GPT2BPETokenizer") {
    files["vocab.json"] = data::read_tokenizer_file(spec.vocab_file, "--vocab-file");
    files["merges.txt"] = data::read_tokenizer_file(spec.merge_file, "--merge-file");
    const nlohmann::json config = {{"tokenizer_class", "GPT2Tokenizer"},
                                   {"model_max_length", model_max_length},
                                   {"bos_token", "<|endoftext|>"},
                                   {"eos_token", "<|endoftext|>"},
                                   {"unk_token", "<|endoftext|>"},
                                   {"add_prefix_space", false},
                                   {"errors", "replace"}};
    files["tokenizer_config.json"] = config.dump(2) + "\n";
  } else if (spec.type == "HuggingFaceTokenizer") {
    // What the loader read: tokenizer.json and the tokenizer_config.json
    // beside it (its EOS), plus special_tokens_map.json from a directory.
    std::error_code ec;
    const bool is_dir = fs::is_directory(spec.tokenizer_model, ec);
    const fs::path file = is_dir ? fs::path(spec.tokenizer_model) / "tokenizer.json" : fs::path(spec.tokenizer_model);
    files["tokenizer.json"] = data::read_tokenizer_file(file.string(), "--tokenizer-model");
    for (const char* name : {"tokenizer_config.json", "special_tokens_map.json"}) {
      const fs::path beside = file.parent_path() / name;
      if ((is_dir || beside.filename() == "tokenizer_config.json") && fs::exists(beside, ec))
        files[name] = data::read_tokenizer_file(beside.string(), "--tokenizer-model");
    }
  } else {  // the SentencePiece types
    files["tokenizer.model"] = data::read_tokenizer_file(spec.tokenizer_model, "--tokenizer-model");
    if (spec.type != "SentencePieceTokenizer") {
      const nlohmann::json config = {{"tokenizer_class", "LlamaTokenizer"},
                                     {"model_max_length", model_max_length},
                                     {"add_bos_token", spec.type == "Llama2Tokenizer"},
                                     {"add_eos_token", false}};
      files["tokenizer_config.json"] = config.dump(2) + "\n";
    }
  }
  return files;
}

}  // namespace kiln::trainer
