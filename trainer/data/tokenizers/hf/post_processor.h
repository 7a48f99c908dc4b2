// tokenizer.json's "post_processor" for one sequence: TemplateProcessing's
// "single" template (special tokens around $A: BOS for Llama), ByteLevel
// (nothing for ids) and Sequence. What it adds is fixed, so it is reduced
// at load to the ids before and after the sequence.
#pragma once

#include <cstdint>
#include <vector>

#include "trainer/data/tokenizers/hf/component_json.h"

namespace kiln::data::hf {

struct SpecialTokensAround {
  std::vector<int32_t> before, after;
};

// Throws kiln::Error naming `where` for an unsupported type or template.
SpecialTokensAround make_post_processor(const json& node, const Where& where);

}  // namespace kiln::data::hf
