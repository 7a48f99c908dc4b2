// Megatron-LM's GPT dataset sampling (megatron/core/datasets: gpt_dataset.py,
// helpers.cpp build_sample_idx, blended_dataset.py, the split and blend
// parsing of the dataset builder), re-implemented so that the same data,
// --split, --seq-length, --seed and sample counts give the same samples in
// the same order as Megatron-LM:
//
//  * --split "969,30,1" is normalised and turned into book-ends over the
//    sequences of the .idx; each split takes [round(a*N), round(b*N)) (round
//    half to even, as Python's round).
//  * num_epochs is the smallest count whose tokens cover num_samples *
//    seq_length + 1; the document index repeats the split's documents that
//    many times and is shuffled as a whole (a short last epoch, < 80% of an
//    epoch's samples, is shuffled separately).
//  * the sample index holds (document-index position, token offset) for the
//    start of every sample; a sample is seq_length + 1 tokens that may cross
//    documents, and consecutive samples share one token.
//  * the shuffle index is a permutation of the samples (the samples of a
//    separate last epoch are permuted among themselves).
//  * shuffles use numpy.random.RandomState(seed).shuffle exactly (MT19937,
//    Fisher-Yates from the end, masked rejection sampling), so the indices
//    equal Megatron's.
//  * blending: Megatron's greedy interleave, each sample going to the
//    dataset furthest below its weighted share.
//
// The three index arrays are cached beside the data (or under
// --data-cache-path), keyed by a hash of everything they depend on, and
// written atomically.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "trainer/data/mmidx.h"

namespace kiln::data {

// numpy.random.RandomState with an integer seed: MT19937 seeded by
// init_genrand, and the legacy shuffle / bounded-integer algorithms.
class NumpyRandomState {
 public:
  explicit NumpyRandomState(uint32_t seed);
  uint32_t next_u32();
  uint64_t next_u64();  // two draws, high word first
  // Uniform in [0, max] by masked rejection (numpy's random_interval).
  uint64_t interval(uint64_t max);
  template <class T>
  void shuffle(T* a, size_t n) {
    for (size_t i = n; i-- > 1;) {
      size_t j = static_cast<size_t>(interval(i));
      T t = a[i];
      a[i] = a[j];
      a[j] = t;
    }
  }

 private:
  std::mt19937 gen_;
};

enum class DataSplit { Train = 0, Valid = 1, Test = 2 };
const char* split_name(DataSplit s);

// Megatron's parse_and_normalize_split: the numbers in the string (missing
// ones are 0), normalised to sum 1. Throws kiln::Error on a bad string.
std::vector<double> parse_split(const std::string& split);
// Book-ends [begin, end) of each split as fractions; nullopt for an empty one.
std::vector<std::optional<std::pair<double, double>>> split_matrix(const std::vector<double>& split);
// Python's round(x) (half to even), as Megatron uses for split boundaries.
int64_t round_half_even(double x);

// --data-path: "prefix" or "w1 prefix1 w2 prefix2 ..." (weights optional
// but all-or-none), as Megatron's get_blend_from_list.
struct Blend {
  std::vector<std::string> prefixes;
  std::vector<double> weights;  // empty: unweighted
};
Blend parse_blend(const std::vector<std::string>& data_path);

// A source of fixed-length samples.
class SampleDataset {
 public:
  virtual ~SampleDataset() = default;
  virtual int64_t size() const = 0;
  virtual int64_t sample_length() const = 0;  // seq_length + 1
  // Writes sample_length() tokens.
  virtual void sample(int64_t index, int32_t* out) const = 0;
  // Where token `position` of sample `index` comes from, for a message about
  // that token ("sequence 200 of data/x_text_document.bin"): a bad token id
  // named no file or document before (finding D15b).
  virtual std::string describe_token(int64_t index, int64_t position) const = 0;
};

struct GptDatasetOptions {
  int64_t seq_length = 0;
  uint32_t seed = 1234;
  std::string cache_dir;  // empty: beside the data (<dir>/cache/GPTDataset_indices)
  bool use_cache = true;
};

class GptDataset : public SampleDataset {
 public:
  // Sequences [begin, end) of data; num_samples < 0 means one epoch.
  GptDataset(std::shared_ptr<const IndexedDataset> data, DataSplit split, int64_t begin, int64_t end,
             int64_t num_samples, const GptDatasetOptions& options);

  int64_t size() const override { return static_cast<int64_t>(sample_index_.size() / 2) - 1; }
  int64_t sample_length() const override { return seq_length_ + 1; }
  void sample(int64_t index, int32_t* out) const override;
  std::string describe_token(int64_t index, int64_t position) const override;

  int64_t num_epochs() const { return num_epochs_; }
  bool loaded_from_cache() const { return from_cache_; }
  const std::string& cache_path() const { return cache_path_; }
  const std::vector<int32_t>& document_index() const { return document_index_; }
  const std::vector<int64_t>& sample_index() const { return sample_index_; }  // pairs
  const std::vector<int64_t>& shuffle_index() const { return shuffle_index_; }

 private:
  void build(int64_t begin, int64_t end, int64_t num_samples, uint32_t seed);
  bool load_cache(const std::string& description);
  void save_cache(const std::string& description) const;

  std::shared_ptr<const IndexedDataset> data_;
  DataSplit split_;
  int64_t seq_length_;
  int64_t num_epochs_ = 0;
  std::vector<int32_t> document_index_;
  std::vector<int64_t> sample_index_;
  std::vector<int64_t> shuffle_index_;
  std::string cache_path_;
  bool from_cache_ = false;
};

class BlendedDataset : public SampleDataset {
 public:
  // weights are normalised here; size samples are interleaved greedily.
  BlendedDataset(std::vector<std::shared_ptr<const SampleDataset>> datasets, std::vector<double> weights, int64_t size);
  int64_t size() const override { return static_cast<int64_t>(dataset_index_.size()); }
  int64_t sample_length() const override { return datasets_[0]->sample_length(); }
  void sample(int64_t index, int32_t* out) const override;
  std::string describe_token(int64_t index, int64_t position) const override;
  const std::vector<int16_t>& dataset_index() const { return dataset_index_; }
  const std::vector<int64_t>& dataset_sample_index() const { return dataset_sample_index_; }

 private:
  std::vector<std::shared_ptr<const SampleDataset>> datasets_;
  std::vector<int16_t> dataset_index_;
  std::vector<int64_t> dataset_sample_index_;
};

// Builds the top-level dataset of one split for --data-path as Megatron's
// BlendedMegatronDatasetBuilder does: one prefix -> a GPT dataset of
// num_samples; weighted prefixes -> per-prefix datasets of
// ceil(ceil(num_samples*w)*1.005) samples blended to sum(ceil(num_samples*w));
// unweighted prefixes -> one epoch each, blended by their sizes.
// Throws kiln::Error when the split has no documents or too few tokens.
std::shared_ptr<const SampleDataset> build_split_dataset(const Blend& blend, const std::string& split, DataSplit which,
                                                         int64_t num_samples, const GptDatasetOptions& options);

}  // namespace kiln::data
