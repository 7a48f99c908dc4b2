#include "trainer/data/gpt_dataset.h"

#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>
#include <sstream>

#include "core/error.h"
#include "core/hash.h"
#include "core/log.h"
#include "core/regular_file.h"

namespace kiln::data {

// ---- numpy.random.RandomState

// std::mt19937 is specified exactly by the C++ standard (seeding is
// init_genrand, output is the tempered MT19937 word), as numpy's legacy
// generator; the bounded draws on top follow numpy's random_interval.
NumpyRandomState::NumpyRandomState(uint32_t seed) : gen_(seed) {}

uint32_t NumpyRandomState::next_u32() { return static_cast<uint32_t>(gen_()); }

uint64_t NumpyRandomState::next_u64() {
  uint64_t hi = next_u32();
  return (hi << 32) | next_u32();
}

uint64_t NumpyRandomState::interval(uint64_t max) {
  if (max == 0) return 0;
  uint64_t mask = max;
  mask |= mask >> 1;
  mask |= mask >> 2;
  mask |= mask >> 4;
  mask |= mask >> 8;
  mask |= mask >> 16;
  mask |= mask >> 32;
  uint64_t v;
  if (max <= 0xFFFFFFFFull) {
    while ((v = (next_u32() & mask)) > max) {
    }
  } else {
    while ((v = (next_u64() & mask)) > max) {
    }
  }
  return v;
}

// ---- splits and blends

const char* split_name(DataSplit s) {
  switch (s) {
    case DataSplit::Train: return "train";
    case DataSplit::Valid: return "valid";
    case DataSplit::Test: return "test";
  }
  return "?";
}

namespace {

// numpy's pairwise summation (numpy.sum of a float64 array), so that
// normalised weights are bit-identical to Megatron's.
double numpy_sum(const double* a, size_t n) {
  if (n < 8) {
    double r = 0.;
    for (size_t i = 0; i < n; ++i) r += a[i];
    return r;
  }
  if (n <= 128) {
    double r[8];
    for (int j = 0; j < 8; ++j) r[j] = a[j];
    size_t i = 8;
    for (; i < n - (n % 8); i += 8)
      for (int j = 0; j < 8; ++j) r[j] += a[i + static_cast<size_t>(j)];
    double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i) res += a[i];
    return res;
  }
  size_t n2 = n / 2;
  n2 -= n2 % 8;
  return numpy_sum(a, n2) + numpy_sum(a + n2, n - n2);
}

std::vector<double> normalize(const std::vector<double>& w) {
  double s = numpy_sum(w.data(), w.size());
  std::vector<double> out(w.size());
  for (size_t i = 0; i < w.size(); ++i) out[i] = w[i] / s;
  return out;
}

}  // namespace

int64_t round_half_even(double x) { return static_cast<int64_t>(std::nearbyint(x)); }

std::vector<double> parse_split(const std::string& split) {
  // Megatron takes every run of [.0-9] as a number; anything else separates.
  // Only separators may stand between numbers: Megatron would read "1e-9" as
  // the numbers 1 and 9, and "-5" as 5, silently. Quotes count as
  // separators: a launch script's word splitting leaves them in the value
  // (NVIDIA's Llama-3 8B example passes "--split '99,1,0'" through an
  // unquoted array), and Megatron reads the numbers between them.
  const auto separates = [](char c) { return c == ',' || c == '/' || c == ' ' || c == '\'' || c == '"'; };
  std::vector<double> v;
  for (size_t i = 0; i < split.size();) {
    if (!(std::isdigit(static_cast<unsigned char>(split[i])) || split[i] == '.')) {
      if (!separates(split[i])) {
        size_t b = i, e = i;
        while (b > 0 && !separates(split[b - 1])) --b;
        while (e < split.size() && !separates(split[e])) ++e;
        throw Error("--split '" + split + "': '" + split.substr(b, e - b) +
                    "' is not a proportion; write non-negative numbers with digits and a dot only (Megatron "
                    "reads nothing else), e.g. --split 969,30,1");
      }
      ++i;
      continue;
    }
    size_t j = i;
    while (j < split.size() && (std::isdigit(static_cast<unsigned char>(split[j])) || split[j] == '.')) ++j;
    std::string num = split.substr(i, j - i);
    char* end = nullptr;
    double x = std::strtod(num.c_str(), &end);
    if (end != num.c_str() + num.size() || !std::isfinite(x)) {
      std::string m = "--split '" + split;
      m += "': '";
      m += num;
      m += "' is not a number; use e.g. --split 969,30,1";
      throw Error(m);
    }
    v.push_back(x);
    i = j;
  }
  if (v.empty() || v.size() > 3)
    throw Error("--split '" + split + "' must give one to three proportions (train,valid,test), e.g. 969,30,1");
  v.resize(3, 0.0);
  double sum = v[0] + v[1] + v[2];
  if (!(sum > 0)) throw Error("--split '" + split + "' has no positive proportion");
  return normalize(v);
}

std::vector<std::optional<std::pair<double, double>>> split_matrix(const std::vector<double>& split) {
  std::vector<std::optional<std::pair<double, double>>> m;
  double begin = 0;
  for (double s : split) {
    double end = begin + s;
    if (end <= begin)
      m.emplace_back(std::nullopt);
    else
      m.emplace_back(std::make_pair(begin, end));
    begin = end;
  }
  return m;
}

Blend parse_blend(const std::vector<std::string>& list) {
  Blend b;
  if (list.empty()) throw Error("--data-path needs at least one prefix");
  auto as_weight = [](const std::string& s, double* w) {
    if (s.empty()) return false;
    char* end = nullptr;
    double x = std::strtod(s.c_str(), &end);
    if (end != s.c_str() + s.size()) return false;
    *w = x;
    return true;
  };
  bool weighted = list.size() % 2 == 0;
  int numeric = 0;
  if (weighted) {
    for (size_t i = 0; i < list.size(); i += 2) {
      double w;
      numeric += as_weight(list[i], &w) ? 1 : 0;
    }
    if (numeric != 0 && static_cast<size_t>(numeric) != list.size() / 2)
      throw Error(
          "--data-path mixes weighted and unweighted entries; give 'W1 PREFIX1 W2 PREFIX2 ...' or only prefixes");
    weighted = numeric > 0;
  }
  if (!weighted) {
    for (const auto& s : list) {
      double w;
      if (as_weight(s, &w) && !std::filesystem::exists(s + ".idx"))
        throw Error("--data-path: '" + s +
                    "' looks like a weight, but weights need one prefix each: "
                    "'W1 PREFIX1 W2 PREFIX2 ...'");
      b.prefixes.push_back(s);
    }
    return b;
  }
  for (size_t i = 0; i < list.size(); i += 2) {
    double w = 0;
    as_weight(list[i], &w);
    if (!(w >= 0) || !std::isfinite(w))
      throw Error("--data-path weight '" + list[i] + "' must be a non-negative number");
    b.weights.push_back(w);
    b.prefixes.push_back(list[i + 1]);
  }
  double s = 0;
  for (double w : b.weights) s += w;
  if (!(s > 0)) throw Error("--data-path weights must not all be zero");
  // Weights are normalised by their sum: a sum past what a double holds
  // would make every weight 0 (and the blend look empty, or unweighted).
  if (!std::isfinite(s))
    throw Error("--data-path weights add up to more than a double holds; give relative weights such as 0.5 0.5");
  return b;
}

// ---- GPT dataset

GptDataset::GptDataset(std::shared_ptr<const IndexedDataset> data, DataSplit split, int64_t begin, int64_t end,
                       int64_t num_samples, const GptDatasetOptions& options)
    : data_(std::move(data)), split_(split), seq_length_(options.seq_length) {
  if (seq_length_ < 1) throw Error("--seq-length must be positive");
  std::ostringstream d;
  d << "kiln GPTDataset indices v1\n"
    << "prefix: " << std::filesystem::absolute(data_->prefix()).lexically_normal().string() << "\n"
    << "idx fingerprint: " << std::hex << data_->fingerprint() << std::dec << "\n"
    << "split: " << split_name(split) << "\n"
    << "sequences: [" << begin << ", " << end << ")\n"
    << "num_samples: " << num_samples << "\n"
    << "sequence_length: " << seq_length_ << "\n"
    << "random_seed: " << options.seed << "\n"
    << "add_extra_token_to_sequence: 1\n";
  const std::string description = d.str();
  if (options.use_cache) {
    std::filesystem::path dir = options.cache_dir.empty() ? std::filesystem::path(data_->prefix()).parent_path() /
                                                                "cache" / "GPTDataset_indices"
                                                          : std::filesystem::path(options.cache_dir);
    std::string hash = sha256_hex(description.data(), description.size()).substr(0, 32);
    cache_path_ = (dir / (hash + "-GPTDataset-" + split_name(split) + ".kidx")).string();
    if (load_cache(description)) {
      from_cache_ = true;
      return;
    }
  }
  build(begin, end, num_samples, options.seed);
  if (options.use_cache) {
    try {
      save_cache(description);
    } catch (const std::exception& e) {
      logger().warn("could not cache the {} dataset indices ({}); they will be rebuilt next time", split_name(split),
                    e.what());
    }
  }
}

void GptDataset::build(int64_t begin, int64_t end, int64_t num_samples, uint32_t seed) {
  const std::vector<int32_t>& sizes = data_->sequence_lengths();
  const int64_t ndocs = end - begin;
  int64_t tokens_per_epoch = 0;
  for (int64_t i = begin; i < end; ++i) tokens_per_epoch += sizes[static_cast<size_t>(i)];
  const int64_t T = seq_length_;
  if (ndocs <= 0 || tokens_per_epoch < 2)
    throw Error(std::string("the ") + split_name(split_) + " split of " + data_->prefix() + " has " +
                std::to_string(ndocs) + " documents and " + std::to_string(tokens_per_epoch) +
                " tokens, too few to draw samples from; change --split or add data");

  // Epochs: enough tokens for num_samples samples of T tokens plus one.
  num_epochs_ = 1;
  if (num_samples >= 0) {
    const int64_t requested = num_samples * T + 1;
    if (requested / tokens_per_epoch > (int64_t{1} << 31) / std::max<int64_t>(ndocs, 1))
      throw Error(std::string("the ") + split_name(split_) + " split of " + data_->prefix() + " has only " +
                  std::to_string(tokens_per_epoch) + " tokens; " + std::to_string(num_samples) +
                  " samples would repeat it more than 2^31 documents' worth; use more data or fewer samples");
    for (int64_t tokens = tokens_per_epoch; tokens < requested; tokens += tokens_per_epoch) ++num_epochs_;
  }
  bool separate_final_epoch = false;
  int64_t samples_sans_final = 0;
  if (num_epochs_ > 1) {
    samples_sans_final = ((num_epochs_ - 1) * tokens_per_epoch - 1) / T;
    const int64_t from_final = num_samples - samples_sans_final;
    const int64_t per_epoch = (tokens_per_epoch - 1) / T;
    separate_final_epoch = from_final < static_cast<int64_t>(0.80 * static_cast<double>(per_epoch));
  }

  NumpyRandomState rng(seed);
  // Document index: the split's documents, num_epochs times, shuffled.
  document_index_.clear();
  document_index_.reserve(static_cast<size_t>(num_epochs_ * ndocs));
  auto add_epochs = [&](int64_t epochs) {
    size_t first = document_index_.size();
    for (int64_t e = 0; e < epochs; ++e)
      for (int64_t i = begin; i < end; ++i) document_index_.push_back(static_cast<int32_t>(i));
    rng.shuffle(document_index_.data() + first, document_index_.size() - first);
  };
  if (!separate_final_epoch) {
    add_epochs(num_epochs_);
  } else {
    add_epochs(num_epochs_ - 1);
    add_epochs(1);
  }

  // Sample index (helpers.cpp build_sample_idx, dropping the last partial sample).
  const int64_t total = (num_epochs_ * tokens_per_epoch - 1) / T;
  sample_index_.assign(static_cast<size_t>(2 * (total + 1)), 0);
  int64_t doc_pos = 0, doc_offset = 0;
  const int64_t last_doc_pos = static_cast<int64_t>(document_index_.size()) - 1;
  for (int64_t s = 1; s <= total; ++s) {
    int64_t remaining = T + 1;
    while (remaining != 0) {
      const int64_t doc_len = sizes[static_cast<size_t>(document_index_[static_cast<size_t>(doc_pos)])] - doc_offset;
      remaining -= doc_len;
      if (remaining <= 0) {
        doc_offset += remaining + doc_len - 1;  // the last token is shared with the next sample
        remaining = 0;
      } else {
        if (doc_pos == last_doc_pos) throw Error("internal error: sample index ran past the document index");
        ++doc_pos;
        doc_offset = 0;
      }
    }
    sample_index_[static_cast<size_t>(2 * s)] = doc_pos;
    sample_index_[static_cast<size_t>(2 * s + 1)] = doc_offset;
  }

  // Shuffle index.
  shuffle_index_.resize(static_cast<size_t>(total));
  for (int64_t i = 0; i < total; ++i) shuffle_index_[static_cast<size_t>(i)] = i;
  if (separate_final_epoch) {
    rng.shuffle(shuffle_index_.data(), static_cast<size_t>(samples_sans_final));
    rng.shuffle(shuffle_index_.data() + samples_sans_final, static_cast<size_t>(total - samples_sans_final));
  } else {
    rng.shuffle(shuffle_index_.data(), shuffle_index_.size());
  }
}

namespace {
constexpr char kCacheMagic[8] = {'K', 'I', 'L', 'N', 'I', 'D', 'X', 'C'};

template <class T>
void append(std::string& s, const T& v) {
  s.append(reinterpret_cast<const char*>(&v), sizeof(T));
}
template <class T>
void append_array(std::string& s, const std::vector<T>& v) {
  append(s, static_cast<uint64_t>(v.size()));
  s.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}
struct Reader {
  const std::string& s;
  size_t pos = 0;
  bool ok = true;
  template <class T>
  T get() {
    T v{};
    if (pos + sizeof(T) > s.size()) return ok = false, v;
    std::memcpy(&v, s.data() + pos, sizeof(T));
    pos += sizeof(T);
    return v;
  }
  template <class T>
  void get_array(std::vector<T>& v) {
    uint64_t n = get<uint64_t>();
    if (!ok || n > (s.size() - pos) / sizeof(T)) return void(ok = false);
    v.resize(n);
    std::memcpy(v.data(), s.data() + pos, n * sizeof(T));
    pos += n * sizeof(T);
  }
};
}  // namespace

namespace {
// The cache file's size as its header says it must be, 0 if the header is
// not a version-1 header for `description`. Reads only the counts, so a
// huge file (or one claiming huge arrays) costs a few small reads.
uint64_t expected_cache_size(int fd, uint64_t file_size, const std::string& description) {
  auto read_at = [&](void* dst, uint64_t n, uint64_t offset) {
    return offset + n <= file_size && ::pread(fd, dst, n, static_cast<off_t>(offset)) == static_cast<ssize_t>(n);
  };
  char magic[8];
  uint32_t version = 0, dlen = 0;
  if (!read_at(magic, 8, 0) || std::memcmp(magic, kCacheMagic, 8) != 0 || !read_at(&version, 4, 8) ||
      !read_at(&dlen, 4, 12) || version != 1 || dlen != description.size())
    return 0;
  uint64_t pos = 16 + uint64_t{dlen} + 8;  // then num_epochs
  for (const uint64_t item : {sizeof(int32_t), sizeof(int64_t), sizeof(int64_t)}) {
    uint64_t count = 0;
    if (!read_at(&count, 8, pos) || count > (file_size - pos - 8) / item) return 0;
    pos += 8 + count * item;
  }
  return pos + 8;  // the hash
}

bool read_whole(int fd, std::string& s) {
  for (size_t got = 0; got < s.size();) {
    const ssize_t n = ::pread(fd, s.data() + got, s.size() - got, static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    got += static_cast<size_t>(n);
  }
  return true;
}
}  // namespace

bool GptDataset::load_cache(const std::string& description) {
  std::error_code ec;
  if (!std::filesystem::exists(std::filesystem::symlink_status(cache_path_, ec))) return false;
  RegularFile file = open_regular_file(cache_path_, kBoundedByHeader);
  if (file.fd < 0) {
    logger().warn("index cache {} {}; rebuilding it", cache_path_, file.problem);
    return false;
  }
  const InputFd in(file.fd, file.size);
  if (expected_cache_size(in.fd(), in.size(), description) != in.size()) {
    logger().warn("index cache {} does not match its header; rebuilding it", cache_path_);
    return false;
  }
  std::string s(in.size(), '\0');
  if (!read_whole(in.fd(), s)) return false;
  if (s.size() < 8 + 4 + 4 + 8 || std::memcmp(s.data(), kCacheMagic, 8) != 0) return false;
  uint64_t stored_hash;
  std::memcpy(&stored_hash, s.data() + s.size() - 8, 8);
  if (hash64(s.data(), s.size() - 8) != stored_hash) {
    logger().warn("index cache {} is corrupt; rebuilding it", cache_path_);
    return false;
  }
  Reader r{s, 8};
  uint32_t version = r.get<uint32_t>();
  uint32_t dlen = r.get<uint32_t>();
  if (!r.ok || version != 1 || r.pos + dlen > s.size() || s.compare(r.pos, dlen, description) != 0) return false;
  r.pos += dlen;
  num_epochs_ = r.get<int64_t>();
  r.get_array(document_index_);
  r.get_array(sample_index_);
  r.get_array(shuffle_index_);
  if (!r.ok || r.pos + 8 != s.size() || sample_index_.size() < 2 ||
      shuffle_index_.size() != sample_index_.size() / 2 - 1) {
    document_index_.clear();
    sample_index_.clear();
    shuffle_index_.clear();
    return false;
  }
  return true;
}

void GptDataset::save_cache(const std::string& description) const {
  std::filesystem::create_directories(std::filesystem::path(cache_path_).parent_path());
  std::string s(kCacheMagic, 8);
  append(s, uint32_t{1});
  append(s, static_cast<uint32_t>(description.size()));
  s += description;
  append(s, num_epochs_);
  append_array(s, document_index_);
  append_array(s, sample_index_);
  append_array(s, shuffle_index_);
  append(s, hash64(s.data(), s.size()));
  write_file_atomic(cache_path_, s);
}

void GptDataset::sample(int64_t index, int32_t* out) const {
  if (index < 0 || index >= size())
    throw Error(std::string("sample ") + std::to_string(index) + " is past the end of the " + split_name(split_) +
                " dataset (" + std::to_string(size()) + " samples)");
  const size_t s = static_cast<size_t>(shuffle_index_[static_cast<size_t>(index)]);
  const int64_t d0 = sample_index_[2 * s], o0 = sample_index_[2 * s + 1];
  const int64_t d1 = sample_index_[2 * s + 2], o1 = sample_index_[2 * s + 3];
  int64_t written = 0;
  for (int64_t d = d0; d <= d1; ++d) {
    const int64_t seq = document_index_[static_cast<size_t>(d)];
    const int64_t offset = d == d0 ? o0 : 0;
    const int64_t length = d < d1 ? data_->sequence_length(seq) - offset : o1 + 1 - offset;
    data_->get(seq, offset, length, out + written);
    written += length;
  }
  if (written != seq_length_ + 1)
    throw Error("internal error: sample " + std::to_string(index) + " has " + std::to_string(written) + " tokens");
}

std::string GptDataset::describe_token(int64_t index, int64_t position) const {
  if (index < 0 || index >= size()) return "sample " + std::to_string(index);
  const size_t s = static_cast<size_t>(shuffle_index_[static_cast<size_t>(index)]);
  const int64_t d0 = sample_index_[2 * s], o0 = sample_index_[2 * s + 1], d1 = sample_index_[2 * s + 2];
  int64_t start = 0;  // the sample position of the document's first token in it
  for (int64_t d = d0; d <= d1; ++d) {
    const int64_t seq = document_index_[static_cast<size_t>(d)];
    const int64_t offset = d == d0 ? o0 : 0;
    const int64_t length = data_->sequence_length(seq) - offset;
    if (d == d1 || position < start + length)
      return "sequence " + std::to_string(seq) + " (token " + std::to_string(offset + position - start) + ") of " +
             data_->prefix() + ".bin";
    start += length;
  }
  return "sample " + std::to_string(index);
}

// ---- blending

BlendedDataset::BlendedDataset(std::vector<std::shared_ptr<const SampleDataset>> datasets, std::vector<double> weights,
                               int64_t size)
    : datasets_(std::move(datasets)) {
  if (datasets_.empty() || datasets_.size() != weights.size() || datasets_.size() >= 32767)
    throw Error("a blend needs one weight per dataset (and fewer than 32767 datasets)");
  weights = normalize(weights);
  dataset_index_.resize(static_cast<size_t>(size));
  dataset_sample_index_.resize(static_cast<size_t>(size));
  std::vector<int64_t> current(datasets_.size(), 0);
  for (int64_t i = 0; i < size; ++i) {
    const double x = std::max(static_cast<double>(i), 1.0);
    size_t best = 0;
    double best_err = weights[0] * x - static_cast<double>(current[0]);
    for (size_t d = 1; d < datasets_.size(); ++d) {
      double err = weights[d] * x - static_cast<double>(current[d]);
      if (err > best_err) best_err = err, best = d;
    }
    dataset_index_[static_cast<size_t>(i)] = static_cast<int16_t>(best);
    dataset_sample_index_[static_cast<size_t>(i)] = current[best]++;
  }
  for (size_t d = 0; d < datasets_.size(); ++d)
    if (current[d] > datasets_[d]->size())
      throw Error("internal error: blend takes " + std::to_string(current[d]) + " samples from dataset " +
                  std::to_string(d) + ", which has " + std::to_string(datasets_[d]->size()));
}

void BlendedDataset::sample(int64_t index, int32_t* out) const {
  if (index < 0 || index >= size())
    throw Error("sample " + std::to_string(index) + " is past the end of the blended dataset (" +
                std::to_string(size()) + " samples)");
  datasets_[static_cast<size_t>(dataset_index_[static_cast<size_t>(index)])]->sample(
      dataset_sample_index_[static_cast<size_t>(index)], out);
}

std::string BlendedDataset::describe_token(int64_t index, int64_t position) const {
  if (index < 0 || index >= size()) return "sample " + std::to_string(index);
  return datasets_[static_cast<size_t>(dataset_index_[static_cast<size_t>(index)])]->describe_token(
      dataset_sample_index_[static_cast<size_t>(index)], position);
}

// ---- the builder

namespace {

std::shared_ptr<const SampleDataset> build_one(const std::string& prefix, const std::string& split, DataSplit which,
                                               int64_t num_samples, const GptDatasetOptions& options) {
  auto data = std::make_shared<const IndexedDataset>(prefix);
  auto matrix = split_matrix(parse_split(split));
  const auto& bookends = matrix[static_cast<size_t>(which)];
  if (!bookends)
    throw Error(std::string("--split ") + split + " gives the " + split_name(which) + " split no documents, but " +
                (which == DataSplit::Valid ? "--eval-iters > 0 needs validation samples; give it a share "
                                             "(e.g. --split 969,30,1) or pass --eval-iters 0"
                                           : "this run needs samples from it"));
  const double n = static_cast<double>(data->num_sequences());
  const int64_t begin = round_half_even(bookends->first * n), end = round_half_even(bookends->second * n);
  if (end <= begin)
    throw Error(std::string("the ") + split_name(which) + " split of " + prefix + " (--split " + split + " over " +
                std::to_string(data->num_sequences()) + " documents) has no documents; " +
                (which == DataSplit::Valid ? "give validation a larger share or pass --eval-iters 0" : "add data"));
  return std::make_shared<const GptDataset>(data, which, begin, end, num_samples, options);
}

}  // namespace

std::shared_ptr<const SampleDataset> build_split_dataset(const Blend& blend, const std::string& split, DataSplit which,
                                                         int64_t num_samples, const GptDatasetOptions& options) {
  if (blend.prefixes.size() == 1 && blend.weights.empty())
    return build_one(blend.prefixes[0], split, which, num_samples, options);
  std::vector<std::shared_ptr<const SampleDataset>> parts;
  if (blend.weights.empty()) {
    // Unweighted: one epoch of each, blended by their sizes.
    std::vector<double> sizes;
    int64_t total = 0;
    for (const auto& p : blend.prefixes) {
      parts.push_back(build_one(p, split, which, -1, options));
      sizes.push_back(static_cast<double>(parts.back()->size()));
      total += parts.back()->size();
    }
    return std::make_shared<const BlendedDataset>(parts, sizes, std::min(num_samples, total));
  }
  // Weighted: each prefix builds its share plus 0.5%; the blend takes the
  // sum of the shares.
  std::vector<double> w = normalize(blend.weights);
  int64_t size = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    const int64_t target = static_cast<int64_t>(std::ceil(static_cast<double>(num_samples) * w[i]));
    const int64_t buffered = static_cast<int64_t>(std::ceil(static_cast<double>(target) * 1.005));
    size += target;
    parts.push_back(build_one(blend.prefixes[i], split, which, buffered, options));
  }
  return std::make_shared<const BlendedDataset>(parts, w, size);
}

}  // namespace kiln::data
