// The built-in training corpus: `kiln train` with no data flags trains a
// small byte-level GPT on English-like text generated here, so a first run
// needs no download. The text comes from a small probabilistic grammar
// (stories with names, places, dialogue, numbers) driven only by
// trainer::Rng, so a seed yields the same bytes on every platform.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace kiln::trainer {

inline constexpr int32_t kByteVocabSize = 256;

// Exactly `bytes` bytes of printable ASCII text (plus '\n'), paragraphs
// separated by blank lines. Same (bytes, seed) -> same text; a longer
// request with the same seed extends a shorter one.
std::string generate_corpus(size_t bytes, uint64_t seed);

// Byte-level tokenizer: token = byte value, vocabulary of 256.
std::vector<int32_t> bytes_to_tokens(const std::string& text);
// Throws kiln::Error on a token outside [0, 256).
std::string tokens_to_bytes(const std::vector<int32_t>& tokens);

}  // namespace kiln::trainer
