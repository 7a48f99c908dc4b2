// Unicode normalization form C of UTF-8 text (tokenizer.json's NFC
// normalizer), on tables generated from Python's unicodedata
// (gen_nfc_tables.py). Text without a character NFC could change (all of
// ASCII, most of any script) is returned as it is after one scan.
#pragma once

#include <string>

namespace kiln::data::hf {

// Normalizes valid UTF-8 text to NFC in place.
void nfc_in_place(std::string& text);

}  // namespace kiln::data::hf
