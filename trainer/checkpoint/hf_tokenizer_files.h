// The tokenizer files of a Hugging Face model directory, made from the
// tokenizer a kiln checkpoint records (trainer/checkpoint/tokenizer_record.h),
// so that AutoTokenizer.from_pretrained reads the export as it reads a
// released model:
//   GPT2BPETokenizer          vocab.json, merges.txt, tokenizer_config.json (GPT2Tokenizer)
//   HuggingFaceTokenizer      tokenizer.json, the tokenizer_config.json beside it (the
//                             loader's EOS), special_tokens_map.json from a directory
//   Llama2Tokenizer,          tokenizer.model, tokenizer_config.json (LlamaTokenizer,
//   GPTSentencePieceTokenizer   add_bos_token as the type adds BOS)
//   SentencePieceTokenizer    tokenizer.model (its added special ids have no HF form)
//   NullTokenizer, none       nothing: there is no text
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

namespace kiln::trainer {

// File name -> contents. The recorded files are read again and must still
// hash as when the checkpoint was saved; a missing or changed file throws a
// one-line kiln::Error naming it (kiln export's --skip-tokenizer leaves them out).
std::map<std::string, std::string> hf_tokenizer_files(const nlohmann::json& meta, const std::string& checkpoint_dir,
                                                      int64_t model_max_length);

}  // namespace kiln::trainer
