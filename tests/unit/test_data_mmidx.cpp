// Megatron MMIDIDX .bin/.idx: the writer's bytes checked field by field
// against a layout decoded by hand here, and the reader's errors.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "trainer/data/mmidx.h"

namespace fs = std::filesystem;
using namespace kiln::data;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("kiln_mmidx_" + std::to_string(::getpid()));
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

template <class T>
T at(const std::string& s, size_t off) {
  T v;
  std::memcpy(&v, s.data() + off, sizeof(T));
  return v;
}

}  // namespace

TEST(Mmidx, WriterProducesMegatronsLayoutAndReaderReadsItBack) {
  TempDir tmp;
  const std::string prefix = (tmp.path / "x").string();
  // Three documents: two sequences (3 + 2 tokens), an empty one, one of 4.
  {
    IndexedDatasetWriter w(prefix, TokenDtype::U16);
    std::vector<int32_t> t1 = {1, 2, 3, 65000, 5}, l1 = {3, 2};
    std::vector<int32_t> t3 = {7, 8, 9, 10}, l3 = {4};
    w.add_document(t1.data(), l1.data(), 2);
    w.add_document(nullptr, nullptr, 0);
    w.add_document(t3.data(), l3.data(), 1);
    EXPECT_FALSE(fs::exists(prefix + ".idx")) << "published before finalize";
    w.finalize();
  }
  const std::string idx = slurp(prefix + ".idx"), bin = slurp(prefix + ".bin");
  ASSERT_EQ(idx.size(), 34u + 3 * 4 + 3 * 8 + 4 * 8);
  EXPECT_EQ(idx.substr(0, 9), std::string("MMIDIDX\0\0", 9));
  EXPECT_EQ(at<uint64_t>(idx, 9), 1u);           // version
  EXPECT_EQ(static_cast<uint8_t>(idx[17]), 8u);  // uint16
  EXPECT_EQ(at<uint64_t>(idx, 18), 3u);          // sequences
  EXPECT_EQ(at<uint64_t>(idx, 26), 4u);          // documents + 1
  EXPECT_EQ(at<int32_t>(idx, 34), 3);
  EXPECT_EQ(at<int32_t>(idx, 38), 2);
  EXPECT_EQ(at<int32_t>(idx, 42), 4);
  EXPECT_EQ(at<int64_t>(idx, 46), 0);
  EXPECT_EQ(at<int64_t>(idx, 54), 6);
  EXPECT_EQ(at<int64_t>(idx, 62), 10);
  EXPECT_EQ(at<int64_t>(idx, 70), 0);
  EXPECT_EQ(at<int64_t>(idx, 78), 2);
  EXPECT_EQ(at<int64_t>(idx, 86), 2);  // the empty document
  EXPECT_EQ(at<int64_t>(idx, 94), 3);
  ASSERT_EQ(bin.size(), 18u);
  EXPECT_EQ(at<uint16_t>(bin, 6), 65000);

  IndexedDataset ds(prefix);
  EXPECT_EQ(ds.dtype(), TokenDtype::U16);
  EXPECT_EQ(ds.num_sequences(), 3);
  EXPECT_EQ(ds.num_documents(), 3);
  EXPECT_EQ(ds.sequence_length(1), 2);
  EXPECT_EQ(ds.sequence_pointer(2), 10);
  EXPECT_EQ(ds.document_index(2), 2);
  std::vector<int32_t> out(4);
  ds.get(0, 1, 2, out.data());
  EXPECT_EQ(out[0], 2);
  EXPECT_EQ(out[1], 3);
  ds.get(1, 0, 2, out.data());
  EXPECT_EQ(out[0], 65000);
  ds.get(2, 0, 4, out.data());
  EXPECT_EQ(out, (std::vector<int32_t>{7, 8, 9, 10}));
  EXPECT_THROW(ds.get(2, 1, 4, out.data()), kiln::Error);
  for (const auto& e : fs::directory_iterator(tmp.path))
    EXPECT_EQ(e.path().string().find(".tmp"), std::string::npos) << "left behind: " << e.path();
}

TEST(Mmidx, Int32TokensAndOptimalDtype) {
  EXPECT_EQ(optimal_dtype(50257), TokenDtype::U16);
  EXPECT_EQ(optimal_dtype(65499), TokenDtype::U16);
  EXPECT_EQ(optimal_dtype(65500), TokenDtype::I32);
  TempDir tmp;
  const std::string prefix = (tmp.path / "big").string();
  {
    IndexedDatasetWriter w(prefix, TokenDtype::I32);
    std::vector<int32_t> t = {100000, 5, 70000}, l = {3};
    w.add_document(t.data(), l.data(), 1);
    w.finalize();
  }
  IndexedDataset ds(prefix);
  EXPECT_EQ(ds.dtype(), TokenDtype::I32);
  std::vector<int32_t> out(3);
  ds.get(0, 0, 3, out.data());
  EXPECT_EQ(out, (std::vector<int32_t>{100000, 5, 70000}));
}

TEST(Mmidx, AbandonedWriterLeavesNothing) {
  TempDir tmp;
  const std::string prefix = (tmp.path / "gone").string();
  {
    IndexedDatasetWriter w(prefix, TokenDtype::U16);
    std::vector<int32_t> t = {1}, l = {1};
    w.add_document(t.data(), l.data(), 1);
  }
  EXPECT_TRUE(fs::is_empty(tmp.path));
}

TEST(Mmidx, ReaderRejectsDamagedFilesWithClearErrors) {
  TempDir tmp;
  const std::string prefix = (tmp.path / "d").string();
  {
    IndexedDatasetWriter w(prefix, TokenDtype::U16);
    std::vector<int32_t> t = {1, 2, 3, 4}, l = {4};
    w.add_document(t.data(), l.data(), 1);
    w.add_document(t.data(), l.data(), 1);
    w.finalize();
  }
  const std::string idx = slurp(prefix + ".idx"), bin = slurp(prefix + ".bin");
  auto expect_error = [&](const std::string& idx_bytes, const std::string& bin_bytes, const std::string& needle) {
    std::ofstream(prefix + ".idx", std::ios::binary | std::ios::trunc) << idx_bytes;
    std::ofstream(prefix + ".bin", std::ios::binary | std::ios::trunc) << bin_bytes;
    try {
      IndexedDataset ds(prefix);
      ADD_FAILURE() << "no error, expected '" << needle << "'";
    } catch (const kiln::Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  std::string bad = idx;
  bad[0] = 'X';
  expect_error(bad, bin, "bad magic");
  expect_error(idx.substr(0, idx.size() - 3), bin, "truncated");
  expect_error(idx, bin.substr(0, bin.size() - 2), "not a pair");
  bad = idx;
  bad[17] = 6;  // float64
  expect_error(bad, bin, "integer type");
  // Issue 13 item 20: counts whose byte sizes wrap around 2^64 used to be
  // printed as the wrapped sizes; the error now quotes the header's claim.
  bad = idx;
  const uint64_t huge = uint64_t{1} << 62;
  std::memcpy(bad.data() + 18, &huge, sizeof huge);
  expect_error(bad, bin, "is corrupt: its header claims 4611686018427387904 sequences and 3 document entries");
  EXPECT_THROW(IndexedDataset((tmp.path / "missing").string()), kiln::Error);
}
