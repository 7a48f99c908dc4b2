#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "core/error.h"
#include "trainer/checkpoint/safetensors.h"
#include "trainer/rng.h"

using namespace kiln::trainer;
namespace fs = std::filesystem;

namespace {

class Safetensors : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("kiln_safetensors_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  std::string write_raw(const std::string& name, const std::string& bytes) const {
    // Replace rather than truncate: truncating a file in place makes ext4 flush
    // it to disk on close, which turns this test's loops into seconds.
    fs::remove(path(name));
    std::ofstream(path(name), std::ios::binary) << bytes;
    return path(name);
  }

  // A file with the given header text (length prefix computed unless given)
  // followed by `data_bytes` zero bytes.
  std::string write_with_header(const std::string& header, size_t data_bytes, uint64_t length = UINT64_MAX) const {
    if (length == UINT64_MAX) length = header.size();
    std::string bytes;
    for (int i = 0; i < 8; ++i) bytes += static_cast<char>((length >> (8 * i)) & 0xff);
    bytes += header;
    bytes += std::string(data_bytes, '\0');
    return write_raw("bad.safetensors", bytes);
  }

  // Asserts a SafetensorsError whose one-line message names the file and
  // contains `needle`.
  void expect_corrupt(const std::string& file, const std::string& needle) const {
    try {
      read_safetensors(file);
      ADD_FAILURE() << "no error for " << needle;
    } catch (const SafetensorsError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(file), std::string::npos) << msg;
      EXPECT_NE(msg.find(needle), std::string::npos) << msg;
      EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    }
  }

  fs::path dir_;
};

std::string read_all(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

TEST_F(Safetensors, RoundTripsDtypesShapesNamesAndMetadata) {
  std::map<std::string, SafeTensor> tensors;
  tensors["layers.0.attention.query_key_value.weight"] =
      SafeTensor::from_f32({2, 3}, {1.5f, -2.0f, 0.0f, 3.25f, 1e-20f, -7.0f});
  tensors["tokens"] = SafeTensor::from_i32({4}, {1, -2, 2147483647, 0});
  tensors["step"] = SafeTensor::from_i64({}, {int64_t{1} << 40});  // scalar: shape []
  tensors["empty"] = SafeTensor::from_f32({0, 5}, {});
  const std::map<std::string, std::string> meta = {{"format", "pt"}, {"kiln", "1"}};
  write_safetensors(path("a.safetensors"), tensors, meta);

  const SafetensorsFile f = read_safetensors(path("a.safetensors"));
  EXPECT_EQ(f.metadata, meta);
  ASSERT_EQ(f.tensors.size(), tensors.size());
  for (const auto& [name, t] : tensors) {
    const SafeTensor& g = f.tensors.at(name);
    EXPECT_EQ(g.dtype, t.dtype) << name;
    EXPECT_EQ(g.shape, t.shape) << name;
    EXPECT_EQ(g.data, t.data) << name;
  }
  EXPECT_EQ(f.tensors.at("tokens").to_i32(), (std::vector<int32_t>{1, -2, 2147483647, 0}));
  EXPECT_EQ(f.tensors.at("step").to_i64(), (std::vector<int64_t>{int64_t{1} << 40}));
  EXPECT_THROW(f.tensors.at("tokens").to_f32(), kiln::Error);
}

TEST_F(Safetensors, EmptyFileAndEmptyMetadata) {
  write_safetensors(path("e.safetensors"), {}, {});
  const SafetensorsFile f = read_safetensors(path("e.safetensors"));
  EXPECT_TRUE(f.tensors.empty());
  EXPECT_TRUE(f.metadata.empty());
}

// Bytes laid out by hand from the format description, as another
// implementation would write them (keys in a different order, padding).
TEST_F(Safetensors, ReadsHandWrittenFile) {
  std::string header = R"({"b":{"data_offsets":[8,12],"dtype":"I32","shape":[1]},)"
                       R"("__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  header.append((8 - header.size() % 8) % 8, ' ');
  std::string bytes;
  for (int i = 0; i < 8; ++i) bytes += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  bytes += header;
  const float a[2] = {1.0f, 2.0f};
  const int32_t b = 7;
  bytes.append(reinterpret_cast<const char*>(a), 8);
  bytes.append(reinterpret_cast<const char*>(&b), 4);
  const SafetensorsFile f = read_safetensors(write_raw("h.safetensors", bytes));
  EXPECT_EQ(f.tensors.at("a").to_f32(), (std::vector<float>{1.0f, 2.0f}));
  EXPECT_EQ(f.tensors.at("b").to_i32(), (std::vector<int32_t>{7}));
  EXPECT_EQ(f.metadata.at("format"), "pt");
}

// kiln import's read: only the named tensors, shapes checked first; the
// rest (and names the file lacks) neither read nor an error.
TEST_F(Safetensors, SubsetReadsOnlyWantedTensorsAndChecksTheirShapes) {
  std::map<std::string, SafeTensor> tensors;
  tensors["keep"] = SafeTensor::from_f32({2}, {1.0f, 2.0f});
  tensors["skip"] = SafeTensor::from_i32({3}, {4, 5, 6});
  write_safetensors(path("s.safetensors"), tensors, {});

  const SafetensorsFile f = read_safetensors_subset(path("s.safetensors"), {{"keep", {2}}, {"elsewhere", {7}}});
  ASSERT_EQ(f.tensors.size(), 1U);
  EXPECT_EQ(f.tensors.at("keep").to_f32(), (std::vector<float>{1.0f, 2.0f}));
  try {
    read_safetensors_subset(path("s.safetensors"), {{"keep", {1, 2}}});
    ADD_FAILURE() << "a wrong shape was read";
  } catch (const kiln::Error& e) {
    EXPECT_EQ(std::string(e.what()), path("s.safetensors") + " tensor 'keep' has shape [2], the model needs [1,2]");
  }

  // A header claiming 4 GiB under a skipped name, the file sparse: only
  // the header and the wanted tensor are read, so this allocates bytes.
  std::string header = R"({"keep":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                       R"("giant":{"dtype":"F32","shape":[1073741824],"data_offsets":[8,4294967304]}})";
  header.append((8 - header.size() % 8) % 8, ' ');
  std::string bytes;
  for (int i = 0; i < 8; ++i) bytes += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  bytes += header;
  const float keep[2] = {3.0f, 4.0f};
  bytes.append(reinterpret_cast<const char*>(keep), 8);
  const std::string giant = write_raw("giant.safetensors", bytes);
  fs::resize_file(giant, bytes.size() + (uint64_t{1} << 32));
  const SafetensorsFile g = read_safetensors_subset(giant, {{"keep", {2}}});
  EXPECT_EQ(g.tensors.at("keep").to_f32(), (std::vector<float>{3.0f, 4.0f}));
  EXPECT_EQ(g.tensors.count("giant"), 0U);
}

TEST_F(Safetensors, WriterPadsHeaderAndAlignsTensors) {
  std::map<std::string, SafeTensor> tensors;
  tensors["a_i32"] = SafeTensor::from_i32({3}, {1, 2, 3});
  tensors["b_i64"] = SafeTensor::from_i64({1}, {9});
  tensors["c_f32"] = SafeTensor::from_f32({1}, {1.0f});
  tensors["d_u8"] = SafeTensor{"U8", {3}, {1, 2, 3}};
  write_safetensors(path("p.safetensors"), tensors, {});
  const std::string bytes = read_all(path("p.safetensors"));
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[i])) << (8 * i);
  EXPECT_EQ(n % 8, 0u);
  EXPECT_EQ(bytes[8], '{');
  const auto header = nlohmann::json::parse(bytes.substr(8, n));
  uint64_t total = 0;
  for (const auto& [name, t] : tensors) {
    const auto begin = header.at(name).at("data_offsets")[0].get<uint64_t>();
    EXPECT_EQ(begin % safetensors_dtype_size(t.dtype), 0u) << name;
    total += t.data.size();
  }
  EXPECT_EQ(bytes.size(), 8 + n + total);
}

TEST_F(Safetensors, WriterRejectsInconsistentTensors) {
  EXPECT_THROW(write_safetensors(path("w"), {{"x", SafeTensor{"F32", {2}, {0, 0, 0}}}}, {}), kiln::Error);
  EXPECT_THROW(write_safetensors(path("w"), {{"x", SafeTensor{"Q4", {1}, {0}}}}, {}), kiln::Error);
  EXPECT_THROW(write_safetensors(path("w"), {{"__metadata__", SafeTensor::from_f32({1}, {1})}}, {}), kiln::Error);
  EXPECT_THROW(SafeTensor::from_f32({2, 2}, {1, 2, 3}), kiln::Error);
  EXPECT_THROW(write_safetensors((dir_ / "no" / "such" / "dir").string(), {}, {}), kiln::Error);
}

TEST_F(Safetensors, MissingFileIsAnErrorButNotCorruption) {
  try {
    read_safetensors(path("missing.safetensors"));
    FAIL();
  } catch (const SafetensorsError&) {
    FAIL() << "a missing file is not a corrupt one";
  } catch (const kiln::Error& e) {
    EXPECT_NE(std::string(e.what()).find("missing.safetensors"), std::string::npos);
  }
}

TEST_F(Safetensors, MalformedHeaders) {
  expect_corrupt(write_raw("short", std::string("\x05\x00\x00", 3)), "too short");
  expect_corrupt(write_with_header("{}", 0, uint64_t{1} << 63), "exceeds");
  expect_corrupt(write_with_header("{}", 0, 5000), "runs past the end");
  expect_corrupt(write_with_header("", 0, 0), "cannot hold");
  expect_corrupt(write_with_header("{not json at all}", 0), "not valid JSON");
  expect_corrupt(write_with_header("[1, 2, 3]  ", 0), "does not start with '{'");
  expect_corrupt(write_with_header(R"({"a": 5})", 0), "not a JSON object");
  expect_corrupt(write_with_header(R"({"a":{"shape":[1],"data_offsets":[0,4]}})", 4), "dtype");
  expect_corrupt(write_with_header(R"({"a":{"dtype":"F32","data_offsets":[0,4]}})", 4), "shape");
  expect_corrupt(write_with_header(R"({"a":{"dtype":"F32","shape":[1]}})", 4), "data_offsets");
  expect_corrupt(write_with_header(R"({"__metadata__":{"k":1}})", 0), "not a string");
  expect_corrupt(write_with_header(R"({"__metadata__":[1]})", 0), "__metadata__");
}

TEST_F(Safetensors, MalformedTensorEntries) {
  expect_corrupt(write_with_header(R"({"x":{"dtype":"Q7","shape":[1],"data_offsets":[0,4]}})", 4),
                 "unknown dtype 'Q7'");
  expect_corrupt(write_with_header(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,100]}})", 8),
                 "tensor 'x' data_offsets beyond end of file");
  expect_corrupt(write_with_header(R"({"x":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8), "need 12");
  expect_corrupt(write_with_header(R"({"x":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4), "shape");
  expect_corrupt(write_with_header(R"({"x":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}})", 4), "shape");
  expect_corrupt(write_with_header(R"({"x":{"dtype":"F32","shape":[4294967296,4294967296,16],)"
                                   R"("data_offsets":[0,4]}})",
                                   4),
                 "too large");
  expect_corrupt(write_with_header(R"({"x":{"dtype":"F32","shape":[0],"data_offsets":[8,0]}})", 8),
                 "begin after they end");
  expect_corrupt(write_with_header(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[-4,0]}})", 4), "data_offsets");
  expect_corrupt(write_with_header(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                   R"("y":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                                   12),
                 "overlap");
  expect_corrupt(write_with_header(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                                   R"("y":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})",
                                   12),
                 "not contiguous");
  expect_corrupt(write_with_header(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 9),
                 "unused bytes after the last tensor");
  // A name given twice: the JSON parser would keep the second entry alone.
  expect_corrupt(write_with_header(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                                   R"("x":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                                   8),
                 "tensor 'x' appears twice in the header");
  expect_corrupt(write_with_header(R"({"__metadata__":{},"__metadata__":{}})", 0), "'__metadata__' appears twice");
}

TEST_F(Safetensors, UnprintableNamesStayOnOneLine) {
  expect_corrupt(write_with_header("{\"bad\\nname\":{\"dtype\":\"Q\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1),
                 "'bad\\x0aname'");
}

// Every truncation and a couple of thousand random byte flips of a valid file
// must yield either a clean read or a kiln::Error: never a crash, hang or
// huge allocation.
TEST_F(Safetensors, SurvivesTruncationAndCorruption) {
  std::map<std::string, SafeTensor> tensors;
  tensors["w"] = SafeTensor::from_f32({4, 4}, std::vector<float>(16, 0.5f));
  tensors["ids"] = SafeTensor::from_i64({3}, {1, 2, 3});
  write_safetensors(path("good.safetensors"), tensors, {{"k", "v"}});
  const std::string good = read_all(path("good.safetensors"));

  for (size_t len = 0; len < good.size(); ++len)
    EXPECT_THROW(read_safetensors(write_raw("t.safetensors", good.substr(0, len))), kiln::Error)
        << "truncated to " << len;

  Rng rng(2024);
  int errors = 0;
  for (int i = 0; i < 2000; ++i) {
    std::string bytes = good;
    const int flips = 1 + static_cast<int>(rng.below(4));
    for (int k = 0; k < flips; ++k) bytes[rng.below(bytes.size())] = static_cast<char>(rng.below(256));
    try {
      read_safetensors(write_raw("f.safetensors", bytes));
    } catch (const kiln::Error&) {
      ++errors;
    }
  }
  EXPECT_GT(errors, 0);
}
