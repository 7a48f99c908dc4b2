// Where training samples come from. A sample is seq_length + 1 tokens:
// inputs are the first seq_length, targets the last seq_length. Samples are
// addressed by (split, index), so a run that resumes at consumed sample k
// continues with exactly the samples an uninterrupted run would have seen.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kiln::trainer {

enum class Split { Train = 0, Valid = 1 };

class TokenSource {
 public:
  virtual ~TokenSource() = default;
  virtual std::string describe() const = 0;
  // Writes seq_length + 1 token ids to out.
  virtual void sample(Split split, int64_t index, int64_t seq_length, int32_t* out) const = 0;
};

// The embedded default: procedurally generated English-like text, byte
// tokens (vocab 256), 95% train / 5% validation by position.
std::unique_ptr<TokenSource> make_embedded_corpus(uint64_t seed);

// Megatron's --mock-data: uniformly random tokens in [0, vocab).
std::unique_ptr<TokenSource> make_mock_data(int64_t vocab_size, uint64_t seed);

struct TrainConfig;
// --data-path: Megatron's GPT datasets (and blends) over .bin/.idx files,
// train sample i = Megatron's train sample i (trainer/data/gpt_dataset.h).
// Validation is built only when --eval-iters > 0.
std::unique_ptr<TokenSource> make_megatron_data(const TrainConfig& cfg);

}  // namespace kiln::trainer
