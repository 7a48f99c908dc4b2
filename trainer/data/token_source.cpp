#include "trainer/data/token_source.h"

#include "core/error.h"
#include "trainer/data/corpus.h"

namespace kiln::trainer {

namespace {

// SplitMix64 finaliser: a sample's position depends only on (seed, split,
// index), never on how many samples were drawn before.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t key(uint64_t seed, Split split, int64_t index) {
  return mix(mix(seed ^ (static_cast<uint64_t>(split) << 56)) ^ static_cast<uint64_t>(index));
}

class EmbeddedCorpus : public TokenSource {
 public:
  explicit EmbeddedCorpus(uint64_t seed) : seed_(seed) {
    // 1 MiB of text: large enough that a small model cannot memorise it in
    // a default run, small enough to generate in milliseconds.
    tokens_ = bytes_to_tokens(generate_corpus(1 << 20, 20261122));
    train_end_ = static_cast<int64_t>(tokens_.size()) * 95 / 100;
  }
  std::string describe() const override {
    return "embedded corpus (" + std::to_string(tokens_.size()) + " byte tokens, 95% train / 5% valid)";
  }
  void sample(Split split, int64_t index, int64_t T, int32_t* out) const override {
    int64_t begin = split == Split::Train ? 0 : train_end_;
    int64_t end = split == Split::Train ? train_end_ : static_cast<int64_t>(tokens_.size());
    int64_t span = end - begin - (T + 1);
    if (span <= 0) throw Error("--seq-length " + std::to_string(T) + " is longer than the embedded corpus split");
    int64_t start = begin + static_cast<int64_t>(key(seed_, split, index) % static_cast<uint64_t>(span));
    for (int64_t i = 0; i <= T; ++i) out[i] = tokens_[static_cast<size_t>(start + i)];
  }

 private:
  uint64_t seed_;
  std::vector<int32_t> tokens_;
  int64_t train_end_ = 0;
};

class MockData : public TokenSource {
 public:
  MockData(int64_t vocab, uint64_t seed) : vocab_(vocab), seed_(seed) {}
  std::string describe() const override {
    return "mock data (uniform random tokens, vocab " + std::to_string(vocab_) + ")";
  }
  void sample(Split split, int64_t index, int64_t T, int32_t* out) const override {
    uint64_t k = key(seed_, split, index);
    for (int64_t i = 0; i <= T; ++i)
      out[i] = static_cast<int32_t>(mix(k + static_cast<uint64_t>(i)) % static_cast<uint64_t>(vocab_));
  }

 private:
  int64_t vocab_;
  uint64_t seed_;
};

}  // namespace

std::unique_ptr<TokenSource> make_embedded_corpus(uint64_t seed) { return std::make_unique<EmbeddedCorpus>(seed); }
std::unique_ptr<TokenSource> make_mock_data(int64_t vocab, uint64_t seed) {
  return std::make_unique<MockData>(vocab, seed);
}

}  // namespace kiln::trainer
