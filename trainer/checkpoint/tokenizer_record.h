// Which tokenizer a checkpoint's model was trained with, in its meta.json:
// the --tokenizer-type, the files (absolute paths) or NullTokenizer's size,
// the SHA-256 of the files' contents, and the unpadded vocab size. A resumed
// run and `kiln generate` check the tokenizer they are given against it, and
// `generate` loads the recorded one when given none.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "trainer/data/tokenizer.h"

namespace kiln::trainer {

nlohmann::json tokenizer_record_json(const data::TokenizerSpec& spec, const data::Tokenizer& tokenizer);

// The flags of a record (throws kiln::Error naming the checkpoint for a
// malformed one).
data::TokenizerSpec tokenizer_spec_from_record(const nlohmann::json& record, const std::string& checkpoint_dir);

// Throws a one-line kiln::Error when `tokenizer` is not the recorded one
// (another type, or files with other contents), naming both and the fix.
void check_same_tokenizer(const nlohmann::json& record, const data::Tokenizer& tokenizer,
                          const std::string& checkpoint_dir);

}  // namespace kiln::trainer
