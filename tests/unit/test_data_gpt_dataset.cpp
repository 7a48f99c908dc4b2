// Megatron GPT dataset sampling. Expected index arrays come from a
// transcription of Megatron-LM's gpt_dataset.py / helpers.cpp run with
// numpy 1.24 (numpy.random.RandomState), so they pin Megatron's exact order.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <numeric>
#include <set>

#include "core/error.h"
#include "trainer/data/gpt_dataset.h"
#include "trainer/data/mmidx.h"

namespace fs = std::filesystem;
using namespace kiln::data;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() /
           ("kiln_ds_" + std::to_string(::getpid()) + "_" + std::to_string(reinterpret_cast<uintptr_t>(this)));
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

// Document d is one sequence of tokens base + d*1000 + k, so any token says
// where it came from.
std::string write_dataset(const fs::path& dir, const std::string& name, const std::vector<int32_t>& sizes,
                          int32_t base = 0) {
  std::string prefix = (dir / name).string();
  IndexedDatasetWriter w(prefix, TokenDtype::I32);
  for (size_t d = 0; d < sizes.size(); ++d) {
    std::vector<int32_t> toks;
    for (int32_t k = 0; k < sizes[d]; ++k) toks.push_back(base + static_cast<int32_t>(d) * 1000 + k);
    w.add_document(toks.data(), &sizes[d], 1);  // a zero size is a zero-length sequence
  }
  w.finalize();
  return prefix;
}

const std::vector<int32_t> kSizes = {5, 3, 8, 1, 12, 7, 4, 9, 2, 6, 0, 11};

template <class A>
std::vector<int64_t> as64(const std::vector<A>& v) {
  return std::vector<int64_t>(v.begin(), v.end());
}

}  // namespace

TEST(GptDataset, NumpyRandomStateShuffleMatchesNumpy) {
  // numpy.random.RandomState(1234).shuffle(numpy.arange(20)), and seed 0 over 10.
  std::vector<int> a(20);
  std::iota(a.begin(), a.end(), 0);
  NumpyRandomState r(1234);
  r.shuffle(a.data(), a.size());
  EXPECT_EQ(a, (std::vector<int>{3, 13, 2, 16, 14, 5, 4, 0, 8, 18, 17, 11, 10, 9, 7, 1, 19, 12, 6, 15}));
  std::vector<int> b(10);
  std::iota(b.begin(), b.end(), 0);
  NumpyRandomState r0(0);
  r0.shuffle(b.data(), b.size());
  EXPECT_EQ(b, (std::vector<int>{2, 8, 4, 9, 1, 6, 7, 3, 0, 5}));
}

TEST(GptDataset, SplitParsingAndBoundariesMatchMegatron) {
  auto bounds = [](const std::string& split, int64_t n) {
    std::vector<std::pair<int64_t, int64_t>> out;
    for (const auto& b : split_matrix(parse_split(split)))
      out.push_back(b ? std::make_pair(round_half_even(b->first * static_cast<double>(n)),
                                       round_half_even(b->second * static_cast<double>(n)))
                      : std::make_pair(int64_t{-1}, int64_t{-1}));
    return out;
  };
  using P = std::vector<std::pair<int64_t, int64_t>>;
  EXPECT_EQ(bounds("949,50,1", 7222), (P{{0, 6854}, {6854, 7215}, {7215, 7222}}));
  EXPECT_EQ(bounds("969,30,1", 7222), (P{{0, 6998}, {6998, 7215}, {7215, 7222}}));
  EXPECT_EQ(bounds("98,2,0", 1000), (P{{0, 980}, {980, 1000}, {-1, -1}}));
  EXPECT_EQ(bounds("1,1,1", 5), (P{{0, 2}, {2, 3}, {3, 5}}));
  EXPECT_EQ(bounds("8,2", 12), (P{{0, 10}, {10, 12}, {-1, -1}}));
  EXPECT_EQ(bounds("100,0,0", 10), (P{{0, 10}, {-1, -1}, {-1, -1}}));
  EXPECT_EQ(round_half_even(2.5), 2);
  EXPECT_EQ(round_half_even(3.5), 4);
  EXPECT_THROW(parse_split("0,0,0"), kiln::Error);
  EXPECT_THROW(parse_split("1,2,3,4"), kiln::Error);
  EXPECT_THROW(parse_split("abc"), kiln::Error);
  EXPECT_THROW(parse_split("90,-10"), kiln::Error);
  EXPECT_EQ(bounds("90/10", 10), (P{{0, 9}, {9, 10}, {-1, -1}}));
  EXPECT_EQ(bounds("90, 10", 10), (P{{0, 9}, {9, 10}, {-1, -1}}));
  // The quotes NVIDIA's Llama-3 8B example leaves in the value, as Megatron reads them.
  EXPECT_EQ(bounds("'90,10'", 10), (P{{0, 9}, {9, 10}, {-1, -1}}));
  EXPECT_EQ(bounds("\"90,10,0\"", 10), (P{{0, 9}, {9, 10}, {-1, -1}}));
}

// Issue 13 item 20: "1e-9" was called a negative proportion (Megatron's
// parser reads it as 1 and 9); the error now quotes the token it refuses.
TEST(GptDataset, SplitNamesTheTokenItCannotRead) {
  auto message = [](const std::string& split) {
    try {
      parse_split(split);
    } catch (const kiln::Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message("100,1e-9,0"),
            "--split '100,1e-9,0': '1e-9' is not a proportion; write non-negative numbers with digits and a dot only "
            "(Megatron reads nothing else), e.g. --split 969,30,1");
  EXPECT_NE(message("90,-10").find("'-10' is not a proportion"), std::string::npos);
  EXPECT_NE(message("'90,1e-3'").find("'1e-3' is not a proportion"), std::string::npos);
}

TEST(GptDataset, IndicesEqualMegatronsForAMultiEpochSplit) {
  TempDir tmp;
  auto data = std::make_shared<const IndexedDataset>(write_dataset(tmp.path, "d", kSizes));
  GptDatasetOptions opt;
  opt.seq_length = 4;
  opt.seed = 1234;
  opt.use_cache = false;
  // 30 samples of the 57-token [0, 10) split: 3 epochs, the last shuffled separately.
  GptDataset ds(data, DataSplit::Train, 0, 10, 30, opt);
  EXPECT_EQ(ds.num_epochs(), 3);
  EXPECT_EQ(as64(ds.document_index()), (std::vector<int64_t>{3, 3, 2, 6, 4, 5, 4, 0, 8, 8, 7, 1, 0, 9, 7,
                                                             1, 9, 2, 6, 5, 8, 1, 7, 6, 9, 5, 4, 3, 0, 2}));
  EXPECT_EQ(ds.sample_index(),
            (std::vector<int64_t>{0,  0,  2,  2, 2,  6, 3,  2, 4,  2, 4,  6, 4,  10, 5,  2, 5,  6, 6,  3, 6,  7,
                                  6,  11, 7,  3, 9,  0, 10, 2, 10, 6, 11, 1, 12, 2,  13, 1, 13, 5, 14, 3, 14, 7,
                                  15, 2,  16, 3, 17, 1, 17, 5, 18, 1, 19, 1, 19, 5,  21, 0, 22, 1, 22, 5, 23, 0,
                                  24, 0,  24, 4, 25, 2, 25, 6, 26, 3, 26, 7, 26, 11, 28, 2, 29, 1, 29, 5}));
  EXPECT_EQ(ds.shuffle_index(),
            (std::vector<int64_t>{8, 20, 14, 24, 6, 25, 4, 5,  13, 18, 27, 15, 17, 10, 22, 21, 23, 1,  12, 19, 2,
                                  3, 16, 26, 9,  0, 11, 7, 31, 41, 29, 30, 34, 35, 38, 39, 36, 28, 32, 40, 37, 33}));
  EXPECT_EQ(ds.size(), 42);

  // One epoch, and a split with an empty document.
  GptDataset one(data, DataSplit::Train, 0, 10, 8, opt);
  EXPECT_EQ(as64(one.document_index()), (std::vector<int64_t>{7, 2, 9, 1, 0, 8, 4, 5, 6, 3}));
  EXPECT_EQ(one.shuffle_index(), (std::vector<int64_t>{3, 13, 2, 1, 7, 5, 4, 0, 8, 6, 12, 11, 10, 9}));
  GptDataset valid(data, DataSplit::Valid, 10, 12, 5, opt);
  EXPECT_EQ(valid.num_epochs(), 2);
  EXPECT_EQ(valid.sample_index(), (std::vector<int64_t>{0, 0, 1, 4, 1, 8, 3, 1, 3, 5, 3, 9}));
  EXPECT_EQ(valid.shuffle_index(), (std::vector<int64_t>{2, 1, 3, 0, 4}));
}

TEST(GptDataset, SamplesCrossDocumentsAndOverlapByOneToken) {
  TempDir tmp;
  auto data = std::make_shared<const IndexedDataset>(write_dataset(tmp.path, "d", kSizes));
  for (int64_t T : {1, 3, 4, 7, 16}) {
    GptDatasetOptions opt;
    opt.seq_length = T;
    opt.use_cache = false;
    GptDataset ds(data, DataSplit::Train, 0, 10, 40, opt);
    // The token stream of the document index, rebuilt independently.
    std::vector<int32_t> stream;
    for (int32_t d : ds.document_index())
      for (int32_t k = 0; k < kSizes[static_cast<size_t>(d)]; ++k) stream.push_back(d * 1000 + k);
    ASSERT_GE(ds.size(), 40);
    std::set<int64_t> seen;
    bool crossed = false;
    std::vector<int32_t> s(static_cast<size_t>(T + 1));
    for (int64_t i = 0; i < ds.size(); ++i) {
      ds.sample(i, s.data());
      const int64_t u = ds.shuffle_index()[static_cast<size_t>(i)];  // position before shuffling
      seen.insert(u);
      // Sample u is stream[u*T, u*T + T + 1): consecutive samples share one token.
      for (int64_t k = 0; k <= T; ++k) ASSERT_EQ(s[static_cast<size_t>(k)], stream[static_cast<size_t>(u * T + k)]);
      crossed = crossed || s.front() / 1000 != s.back() / 1000;
    }
    EXPECT_EQ(static_cast<int64_t>(seen.size()), ds.size()) << "shuffle index is not a permutation";
    EXPECT_TRUE(crossed) << "no sample crossed a document boundary";
    EXPECT_THROW(ds.sample(ds.size(), s.data()), kiln::Error);
    // Every document appears once per epoch.
    std::vector<int> count(12, 0);
    for (int32_t d : ds.document_index()) ++count[static_cast<size_t>(d)];
    for (int d = 0; d < 10; ++d) EXPECT_EQ(count[static_cast<size_t>(d)], ds.num_epochs());
  }
}

TEST(GptDataset, SplitsTakeTheirDocumentRanges) {
  TempDir tmp;
  std::vector<int32_t> sizes(100);
  for (size_t i = 0; i < sizes.size(); ++i) sizes[i] = 3 + static_cast<int32_t>(i % 7);
  std::string prefix = write_dataset(tmp.path, "d", sizes);
  GptDatasetOptions opt;
  opt.seq_length = 8;
  opt.use_cache = false;
  Blend blend{{prefix}, {}};
  // 90,7,3 over 100 documents: train [0,90), valid [90,97), test [97,100).
  const std::pair<DataSplit, std::pair<int, int>> cases[] = {
      {DataSplit::Train, {0, 90}}, {DataSplit::Valid, {90, 97}}, {DataSplit::Test, {97, 100}}};
  for (const auto& [which, range] : cases) {
    auto ds = build_split_dataset(blend, "90,7,3", which, 50, opt);
    std::vector<int32_t> s(9);
    for (int64_t i = 0; i < ds->size(); ++i) {
      ds->sample(i, s.data());
      for (int32_t t : s) {
        EXPECT_GE(t / 1000, range.first);
        EXPECT_LT(t / 1000, range.second);
      }
    }
  }
}

TEST(GptDataset, EmptyEvalSplitIsAClearError) {
  TempDir tmp;
  std::string prefix = write_dataset(tmp.path, "d", kSizes);
  GptDatasetOptions opt;
  opt.seq_length = 4;
  opt.use_cache = false;
  Blend blend{{prefix}, {}};
  try {
    build_split_dataset(blend, "100,0,0", DataSplit::Valid, 10, opt);
    FAIL() << "no error";
  } catch (const kiln::Error& e) {
    EXPECT_NE(std::string(e.what()).find("--eval-iters"), std::string::npos) << e.what();
  }
  // A split whose share rounds to no documents: [2, 2) of 3.
  std::string small = write_dataset(tmp.path, "small", {5, 5, 5});
  try {
    build_split_dataset(Blend{{small}, {}}, "2,1,1", DataSplit::Valid, 10, opt);
    FAIL() << "no error";
  } catch (const kiln::Error& e) {
    EXPECT_NE(std::string(e.what()).find("no documents"), std::string::npos) << e.what();
  }
  // A split whose documents are all empty.
  std::string empty = write_dataset(tmp.path, "empty", {4, 4, 4, 0});
  EXPECT_THROW(build_split_dataset(Blend{{empty}, {}}, "3,1", DataSplit::Valid, 10, opt), kiln::Error);
}

TEST(GptDataset, BlendingHitsItsProportionsOver10kSamples) {
  TempDir tmp;
  std::vector<int32_t> sizes(50, 40);
  std::string a = write_dataset(tmp.path, "a", sizes, 0);
  std::string b = write_dataset(tmp.path, "b", sizes, 1000000);
  std::string c = write_dataset(tmp.path, "c", sizes, 2000000);
  GptDatasetOptions opt;
  opt.seq_length = 16;
  opt.use_cache = false;
  Blend blend = parse_blend({"0.5", a, "0.3", b, "0.2", c});
  ASSERT_EQ(blend.weights.size(), 3u);
  auto ds = build_split_dataset(blend, "1", DataSplit::Train, 10000, opt);
  ASSERT_GE(ds->size(), 10000);
  std::vector<int64_t> from(3, 0);
  std::vector<int32_t> s(17);
  for (int64_t i = 0; i < 10000; ++i) {
    ds->sample(i, s.data());
    int src = s[0] / 1000000;
    for (int32_t t : s) ASSERT_EQ(t / 1000000, src);  // a sample never mixes datasets
    ++from[static_cast<size_t>(src)];
  }
  EXPECT_NEAR(static_cast<double>(from[0]) / 10000, 0.5, 0.01);
  EXPECT_NEAR(static_cast<double>(from[1]) / 10000, 0.3, 0.01);
  EXPECT_NEAR(static_cast<double>(from[2]) / 10000, 0.2, 0.01);

  // Megatron's greedy interleave, 0.7 / 0.3, first 20 picks.
  auto two = build_split_dataset(parse_blend({"7", a, "3", b}), "1", DataSplit::Train, 20, opt);
  const auto& order = dynamic_cast<const BlendedDataset&>(*two).dataset_index();
  EXPECT_EQ(std::vector<int16_t>(order.begin(), order.begin() + 20),
            (std::vector<int16_t>{0, 1, 0, 0, 1, 0, 0, 1, 0, 0, 0, 1, 0, 0, 1, 0, 0, 1, 0, 0}));
}

TEST(GptDataset, BlendFlagParsing) {
  EXPECT_EQ(parse_blend({"pre"}).prefixes, (std::vector<std::string>{"pre"}));
  EXPECT_TRUE(parse_blend({"a", "b"}).weights.empty());
  Blend w = parse_blend({"0.7", "a", "0.3", "b"});
  EXPECT_EQ(w.prefixes, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(w.weights, (std::vector<double>{0.7, 0.3}));
  EXPECT_THROW(parse_blend({"0.7", "a", "b", "c"}), kiln::Error);
  EXPECT_THROW(parse_blend({"0.7", "a", "0.3"}), kiln::Error);
  EXPECT_THROW(parse_blend({"0", "a", "0", "b"}), kiln::Error);
  EXPECT_THROW(parse_blend({}), kiln::Error);
}

TEST(GptDataset, IndicesAreCachedBesideTheDataAndRebuiltWhenCorrupt) {
  TempDir tmp;
  auto data = std::make_shared<const IndexedDataset>(write_dataset(tmp.path, "d", kSizes));
  GptDatasetOptions opt;
  opt.seq_length = 4;
  GptDataset first(data, DataSplit::Train, 0, 10, 30, opt);
  EXPECT_FALSE(first.loaded_from_cache());
  ASSERT_TRUE(fs::exists(first.cache_path()));
  EXPECT_EQ(fs::path(first.cache_path()).parent_path(), tmp.path / "cache" / "GPTDataset_indices");
  GptDataset second(data, DataSplit::Train, 0, 10, 30, opt);
  EXPECT_TRUE(second.loaded_from_cache());
  EXPECT_EQ(second.document_index(), first.document_index());
  EXPECT_EQ(second.sample_index(), first.sample_index());
  EXPECT_EQ(second.shuffle_index(), first.shuffle_index());
  EXPECT_EQ(second.num_epochs(), first.num_epochs());
  // Any parameter change is another cache entry.
  opt.seed = 99;
  GptDataset other(data, DataSplit::Train, 0, 10, 30, opt);
  EXPECT_FALSE(other.loaded_from_cache());
  EXPECT_NE(other.cache_path(), first.cache_path());
  EXPECT_NE(other.shuffle_index(), first.shuffle_index());
  opt.seed = 1234;
  // A corrupted entry is rebuilt, never trusted.
  {
    std::fstream f(first.cache_path(), std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-20, std::ios::end);
    f.put('\x7f');
  }
  GptDataset third(data, DataSplit::Train, 0, 10, 30, opt);
  EXPECT_FALSE(third.loaded_from_cache());
  EXPECT_EQ(third.shuffle_index(), first.shuffle_index());
  // No temporary files are left behind.
  for (const auto& e : fs::directory_iterator(tmp.path / "cache" / "GPTDataset_indices"))
    EXPECT_EQ(e.path().string().find(".tmp"), std::string::npos) << e.path();
  // --data-cache-path puts them elsewhere.
  opt.cache_dir = (tmp.path / "elsewhere").string();
  GptDataset moved(data, DataSplit::Train, 0, 10, 30, opt);
  EXPECT_EQ(fs::path(moved.cache_path()).parent_path(), tmp.path / "elsewhere");
  EXPECT_TRUE(fs::exists(moved.cache_path()));
}
