// kiln preprocess: tiny Shakespeare as JSONL -> .bin/.idx, checked field by
// field against values computed here from the tokenizer; worker-count
// independence; .jsonl.gz; and every bad-input case.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "trainer/data/gpt2_tokenizer.h"
#include "trainer/data/mmidx.h"
#include "trainer/data/preprocess.h"

namespace fs = std::filesystem;
using namespace kiln::data;

namespace {

const std::string kShared = KILN_TEST_SHARED_DIR;
const std::string kGpt2 = kShared + "/data/gpt2";
const std::string kShakespeare = kShared + "/data/corpus/tinyshakespeare.txt";

#define REQUIRE_SHARED()                                                               \
  if (!fs::exists(kGpt2 + "/gpt2-vocab.json") || !fs::exists(kShakespeare))            \
  GTEST_SKIP() << "needs GPT-2 vocab/merges and tinyshakespeare.txt under " << kShared \
               << "/data (../shared beside the project)"

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("kiln_pre_" + std::to_string(::getpid()));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

std::shared_ptr<const Gpt2Tokenizer> gpt2() {
  static auto t = Gpt2Tokenizer::load(kGpt2 + "/gpt2-vocab.json", kGpt2 + "/gpt2-merges.txt");
  return t;
}

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

// Paragraphs of tiny Shakespeare (split on blank lines), one document each.
std::vector<std::string> paragraphs() {
  std::string text = slurp(kShakespeare);
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find("\n\n", pos);
    if (end == std::string::npos) end = text.size();
    out.push_back(text.substr(pos, end - pos));
    pos = end + 2;
  }
  return out;
}

void write_jsonl(const fs::path& path, const std::vector<std::string>& texts) {
  std::ofstream out(path, std::ios::binary);
  for (const auto& t : texts) out << nlohmann::json{{"text", t}}.dump() << "\n";
}

PreprocessOptions options(const fs::path& input, const fs::path& prefix, int64_t workers) {
  PreprocessOptions o;
  o.input = input.string();
  o.output_prefix = prefix.string();
  o.workers = workers;
  o.append_eod = true;
  o.log = nullptr;
  o.chunk_bytes = 64 << 10;  // several chunks even for small inputs
  return o;
}

std::shared_ptr<const Gpt2Tokenizer> tiny_tokenizer() {
  // 256 byte tokens and <|endoftext|>, no merges beyond one: enough for error paths.
  nlohmann::json v = nlohmann::json::object();
  auto byte_char = [](int b) {
    int cp = b, n = 0;
    auto printable = [](int x) { return (x >= 33 && x <= 126) || (x >= 161 && x <= 172) || (x >= 174 && x <= 255); };
    if (!printable(b)) {
      for (int x = 0; x < b; ++x) n += printable(x) ? 0 : 1;
      cp = 256 + n;
    }
    std::string s;
    if (cp < 0x80)
      s += static_cast<char>(cp);
    else
      s += static_cast<char>(0xC0 | (cp >> 6)), s += static_cast<char>(0x80 | (cp & 0x3F));
    return s;
  };
  for (int b = 0; b < 256; ++b) v[byte_char(b)] = b;
  v["ab"] = 256;
  v["<|endoftext|>"] = 257;
  return std::make_shared<const Gpt2Tokenizer>(v.dump(), "#version: 0.2\na b\n");
}

std::string error_of(const PreprocessOptions& o, std::shared_ptr<const Gpt2Tokenizer> tok) {
  try {
    preprocess(o, tok);
  } catch (const kiln::Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST(Preprocess, TinyShakespeareIndexMatchesIndependentComputation) {
  REQUIRE_SHARED();
  TempDir tmp;
  const auto docs = paragraphs();
  write_jsonl(tmp.path / "ts.jsonl", docs);
  auto tok = gpt2();
  PreprocessResult r = preprocess(options(tmp.path / "ts.jsonl", tmp.path / "ts", 2), tok);
  ASSERT_EQ(r.outputs, (std::vector<std::string>{(tmp.path / "ts_text_document").string()}));
  EXPECT_EQ(r.documents, static_cast<int64_t>(docs.size()));

  // Expected arrays: each non-empty paragraph is one sequence of its tokens + EOD.
  std::vector<int32_t> lengths;
  std::vector<int64_t> pointers, doc_index{0};
  std::vector<uint16_t> tokens;
  for (const auto& d : docs) {
    std::vector<int32_t> ids = tok->encode(d);
    if (!ids.empty()) {
      ids.push_back(50256);
      pointers.push_back(static_cast<int64_t>(tokens.size()) * 2);
      lengths.push_back(static_cast<int32_t>(ids.size()));
      tokens.insert(tokens.end(), ids.begin(), ids.end());
    }
    doc_index.push_back(static_cast<int64_t>(lengths.size()));
  }
  const std::string idx = slurp(tmp.path / "ts_text_document.idx");
  const std::string bin = slurp(tmp.path / "ts_text_document.bin");
  const size_t S = lengths.size(), D = doc_index.size();
  ASSERT_EQ(idx.size(), 34 + 4 * S + 8 * S + 8 * D);
  EXPECT_EQ(idx.substr(0, 9), std::string("MMIDIDX\0\0", 9));
  EXPECT_EQ(at<uint64_t>(idx, 9), 1u);
  EXPECT_EQ(static_cast<uint8_t>(idx[17]), 8u);
  EXPECT_EQ(at<uint64_t>(idx, 18), S);
  EXPECT_EQ(at<uint64_t>(idx, 26), D);
  for (size_t i = 0; i < S; ++i) {
    ASSERT_EQ(at<int32_t>(idx, 34 + 4 * i), lengths[i]) << "length " << i;
    ASSERT_EQ(at<int64_t>(idx, 34 + 4 * S + 8 * i), pointers[i]) << "pointer " << i;
  }
  for (size_t i = 0; i < D; ++i) ASSERT_EQ(at<int64_t>(idx, 34 + 12 * S + 8 * i), doc_index[i]) << "doc " << i;
  ASSERT_EQ(bin.size(), tokens.size() * 2);
  EXPECT_EQ(std::memcmp(bin.data(), tokens.data(), bin.size()), 0);

  // And through the mmap reader.
  IndexedDataset ds((tmp.path / "ts_text_document").string());
  EXPECT_EQ(ds.num_sequences(), static_cast<int64_t>(S));
  EXPECT_EQ(ds.num_documents(), static_cast<int64_t>(docs.size()));
  std::vector<int32_t> got;
  for (int64_t i = 0; i < ds.num_sequences(); ++i) {
    std::vector<int32_t> seq(static_cast<size_t>(ds.sequence_length(i)));
    ds.get(i, 0, ds.sequence_length(i), seq.data());
    got.insert(got.end(), seq.begin(), seq.end());
  }
  EXPECT_TRUE(std::equal(got.begin(), got.end(), tokens.begin(), tokens.end()));
  EXPECT_EQ(tok->decode(got.data(), static_cast<size_t>(lengths[0]) - 1), docs[0]);
}

TEST(Preprocess, OutputIsIdenticalForAnyWorkerCountAndForGzipInput) {
  REQUIRE_SHARED();
  TempDir tmp;
  const auto docs = paragraphs();
  write_jsonl(tmp.path / "ts.jsonl", docs);
  {
    std::string plain = slurp(tmp.path / "ts.jsonl");
    gzFile gz = gzopen((tmp.path / "ts.jsonl.gz").c_str(), "wb");
    ASSERT_TRUE(gz);
    ASSERT_EQ(gzwrite(gz, plain.data(), static_cast<unsigned>(plain.size())), static_cast<int>(plain.size()));
    gzclose(gz);
  }
  auto tok = gpt2();
  preprocess(options(tmp.path / "ts.jsonl", tmp.path / "w1", 1), tok);
  preprocess(options(tmp.path / "ts.jsonl", tmp.path / "w2", 2), tok);
  preprocess(options(tmp.path / "ts.jsonl", tmp.path / "w4", 4), tok);
  preprocess(options(tmp.path / "ts.jsonl.gz", tmp.path / "gz", 2), tok);
  for (const char* ext : {".bin", ".idx"}) {
    const std::string one = slurp(tmp.path / (std::string("w1_text_document") + ext));
    ASSERT_FALSE(one.empty());
    EXPECT_EQ(one, slurp(tmp.path / (std::string("w2_text_document") + ext))) << ext;
    EXPECT_EQ(one, slurp(tmp.path / (std::string("w4_text_document") + ext))) << ext;
    EXPECT_EQ(one, slurp(tmp.path / (std::string("gz_text_document") + ext))) << ext;
  }
}

TEST(Preprocess, KeysListsEmptyDocumentsAndEod) {
  TempDir tmp;
  {
    std::ofstream out(tmp.path / "in.jsonl");
    out << R"({"text": "ab", "title": "b"})"
        << "\n"
        << R"({"text": "", "title": ""})"
        << "\n"  // empty: a document with no sequences
        << "\n"  // blank: skipped
        << R"({"text": ["a", "", "bb"], "title": "x"})"
        << "\r\n"                                           // a list: one sequence per non-empty string
        << R"({"text": "a<|endoftext|>a", "title": "y"})";  // no final newline
  }
  PreprocessOptions o = options(tmp.path / "in.jsonl", tmp.path / "o", 2);
  o.json_keys = {"text", "title"};
  PreprocessResult r = preprocess(o, tiny_tokenizer());
  EXPECT_EQ(r.documents, 4);
  EXPECT_EQ(r.blank_lines, 1);
  IndexedDataset text((tmp.path / "o_text_document").string());
  IndexedDataset title((tmp.path / "o_title_document").string());
  EXPECT_EQ(text.num_documents(), 4);
  EXPECT_EQ(title.num_documents(), 4);
  // text: [ab, EOD] | - | [a], [b b EOD] | [a EOD a EOD]
  EXPECT_EQ(text.num_sequences(), 4);
  EXPECT_EQ(text.sequence_lengths(), (std::vector<int32_t>{2, 1, 3, 4}));
  EXPECT_EQ(text.document_index(1), 1);
  EXPECT_EQ(text.document_index(2), 1);
  EXPECT_EQ(text.document_index(3), 3);
  std::vector<int32_t> t(4);
  text.get(0, 0, 2, t.data());
  EXPECT_EQ(t[0], 256);  // "ab" merged
  EXPECT_EQ(t[1], 257);  // EOD
  text.get(3, 0, 4, t.data());
  EXPECT_EQ(t, (std::vector<int32_t>{'a', 257, 'a', 257}));
  EXPECT_EQ(title.sequence_lengths(), (std::vector<int32_t>{2, 2, 2}));
}

TEST(Preprocess, MalformedJsonNamesTheLineOrIsSkipped) {
  TempDir tmp;
  {
    std::ofstream out(tmp.path / "in.jsonl");
    out << R"({"text": "a"})"
        << "\n"
        << R"({"text": "b")"
        << "\n"
        << R"({"text": "c"})"
        << "\n"
        << R"([1, 2])"
        << "\n"
        << R"({"text": "d"})"
        << "\n";
  }
  PreprocessOptions o = options(tmp.path / "in.jsonl", tmp.path / "o", 2);
  std::string e = error_of(o, tiny_tokenizer());
  EXPECT_NE(e.find("line 2 of"), std::string::npos) << e;
  EXPECT_NE(e.find("not valid JSON"), std::string::npos) << e;
  EXPECT_NE(e.find("--skip-bad-lines"), std::string::npos) << e;
  EXPECT_FALSE(fs::exists(tmp.path / "o_text_document.idx"));
  EXPECT_FALSE(fs::exists(tmp.path / "o_text_document.bin"));
  EXPECT_EQ(std::distance(fs::directory_iterator(tmp.path), fs::directory_iterator()), 1) << "temporaries left";

  o.skip_bad_lines = true;
  PreprocessResult r = preprocess(o, tiny_tokenizer());
  EXPECT_EQ(r.skipped_lines, 2);  // line 2 (broken) and line 4 (not an object)
  EXPECT_EQ(r.documents, 3);
  EXPECT_EQ(IndexedDataset((tmp.path / "o_text_document").string()).num_documents(), 3);
}

TEST(Preprocess, InvalidUtf8IsNamedOrSkipped) {
  TempDir tmp;
  {
    std::ofstream out(tmp.path / "in.jsonl", std::ios::binary);
    out << R"({"text": "fine"})"
        << "\n"
        << "{\"text\": \"bad \xC3\x28 byte\"}"
        << "\n";
  }
  PreprocessOptions o = options(tmp.path / "in.jsonl", tmp.path / "o", 1);
  std::string e = error_of(o, tiny_tokenizer());
  EXPECT_NE(e.find("line 2"), std::string::npos) << e;
  EXPECT_NE(e.find("not valid UTF-8"), std::string::npos) << e;
  o.skip_bad_lines = true;
  EXPECT_EQ(preprocess(o, tiny_tokenizer()).skipped_lines, 1);
}

TEST(Preprocess, MissingKeyAndWrongTypeAreClearErrors) {
  TempDir tmp;
  {
    std::ofstream out(tmp.path / "in.jsonl");
    out << R"({"text": "a"})"
        << "\n"
        << R"({"content": "b", "id": 3})"
        << "\n";
  }
  PreprocessOptions o = options(tmp.path / "in.jsonl", tmp.path / "o", 2);
  o.skip_bad_lines = true;  // a missing key is a usage error, never skipped
  std::string e = error_of(o, tiny_tokenizer());
  EXPECT_NE(e.find("line 2"), std::string::npos) << e;
  EXPECT_NE(e.find("no key 'text'"), std::string::npos) << e;
  EXPECT_NE(e.find("'content'"), std::string::npos) << e;
  EXPECT_NE(e.find("--json-keys"), std::string::npos) << e;
  EXPECT_FALSE(fs::exists(tmp.path / "o_text_document.idx"));
  {
    std::ofstream out(tmp.path / "in.jsonl");
    out << R"({"text": 5})"
        << "\n";
  }
  e = error_of(o, tiny_tokenizer());
  EXPECT_NE(e.find("line 1"), std::string::npos) << e;
  EXPECT_NE(e.find("not a string"), std::string::npos) << e;
}

TEST(Preprocess, UnreadableAndTruncatedInputsAreErrors) {
  TempDir tmp;
  PreprocessOptions o = options(tmp.path / "missing.jsonl", tmp.path / "o", 1);
  EXPECT_NE(error_of(o, tiny_tokenizer()).find("cannot open --input"), std::string::npos);
  {
    std::string text;
    for (int i = 0; i < 2000; ++i) text += R"({"text": "line number )" + std::to_string(i) + "\"}\n";
    gzFile gz = gzopen((tmp.path / "t.jsonl.gz").c_str(), "wb");
    gzwrite(gz, text.data(), static_cast<unsigned>(text.size()));
    gzclose(gz);
    std::string bytes = slurp(tmp.path / "t.jsonl.gz");
    std::ofstream(tmp.path / "t.jsonl.gz", std::ios::binary | std::ios::trunc) << bytes.substr(0, bytes.size() / 2);
  }
  o.input = (tmp.path / "t.jsonl.gz").string();
  std::string e = error_of(o, tiny_tokenizer());
  EXPECT_NE(e.find("truncated"), std::string::npos) << e;
  EXPECT_FALSE(fs::exists(tmp.path / "o_text_document.idx"));
  EXPECT_FALSE(fs::exists(tmp.path / "o_text_document.bin"));
}
