// NullTokenizer (Megatron's --tokenizer-type NullTokenizer): ids as text,
// vocab N + 1 with EOD = N; what Python's int() accepts per space-separated
// field is accepted, the rest is refused in one line. And the factory's
// one-line errors for types and flags.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>

#include "core/error.h"
#include "trainer/data/tokenizer.h"
#include "trainer/data/tokenizers/null_tokenizer.h"

using kiln::data::load_tokenizer;
using kiln::data::NullTokenizer;
using kiln::data::TokenizerSpec;

namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const kiln::Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST(NullTokenizer, MegatronVocabAndEod) {
  NullTokenizer t(100);
  EXPECT_EQ(t.vocab_size(), 101);  // _vocab_size_without_eod + 1
  EXPECT_EQ(t.eod(), 100);
  EXPECT_EQ(t.type(), "NullTokenizer");
}

TEST(NullTokenizer, EncodesWhatPythonIntAccepts) {
  NullTokenizer t(100);
  EXPECT_EQ(t.encode("12 7 3"), (std::vector<int32_t>{12, 7, 3}));
  EXPECT_EQ(t.encode("0"), (std::vector<int32_t>{0}));
  EXPECT_EQ(t.encode("100"), (std::vector<int32_t>{100}));  // EOD itself is an id
  // int() strips surrounding whitespace other than the separating spaces.
  EXPECT_EQ(t.encode("5\n"), (std::vector<int32_t>{5}));
  EXPECT_EQ(t.encode("\t5 +6 007"), (std::vector<int32_t>{5, 6, 7}));
}

TEST(NullTokenizer, RefusesWhatPythonIntRefuses) {
  NullTokenizer t(100);
  for (const char* text : {"", "1  2", "1 ", " 1", "a", "1.5", "-", "+", "0x10", "1,2"}) {
    std::string e = error_of([&] { t.encode(text); });
    EXPECT_NE(e.find("is not a token id"), std::string::npos) << text << ": " << e;
  }
}

TEST(NullTokenizer, RefusesIdsAboveTheVocab) {
  NullTokenizer t(100);
  std::string e = error_of([&] { t.encode("5 101"); });
  EXPECT_NE(e.find("token id 101 (field 2) is above --vocab-size 100"), std::string::npos) << e;
  // A number far beyond int64 is refused the same way, without overflow.
  e = error_of([&] { t.encode("99999999999999999999999999"); });
  EXPECT_NE(e.find("is above --vocab-size 100"), std::string::npos) << e;
  e = error_of([&] { t.encode("-3"); });
  EXPECT_NE(e.find("is not a token id"), std::string::npos) << e;
}

TEST(NullTokenizer, DecodeJoinsWithSpaces) {
  NullTokenizer t(100);
  EXPECT_EQ(t.decode(std::vector<int32_t>{1, 22, 100}), "1 22 100");
  EXPECT_EQ(t.encode(t.decode(std::vector<int32_t>{4, 0, 9})), (std::vector<int32_t>{4, 0, 9}));
  EXPECT_NE(error_of([&] { t.decode(std::vector<int32_t>{101}); }).find("outside"), std::string::npos);
}

TEST(NullTokenizer, HashDependsOnTheSizeOnly) {
  EXPECT_EQ(NullTokenizer(100).sha256(), NullTokenizer(100).sha256());
  EXPECT_NE(NullTokenizer(100).sha256(), NullTokenizer(101).sha256());
}

TEST(LoadTokenizer, OneLineErrors) {
  TokenizerSpec spec;
  EXPECT_NE(error_of([&] { load_tokenizer(spec); }).find("--tokenizer-type is required"), std::string::npos);
  spec.type = "BertWordPieceLowerCase";
  EXPECT_NE(error_of([&] { load_tokenizer(spec); }).find("--tokenizer-type BertWordPieceLowerCase is not supported"),
            std::string::npos);
  spec.type = "NullTokenizer";
  EXPECT_NE(error_of([&] { load_tokenizer(spec); }).find("needs --vocab-size"), std::string::npos);
  spec.type = "GPT2BPETokenizer";
  EXPECT_NE(error_of([&] { load_tokenizer(spec); }).find("needs --vocab-file"), std::string::npos);
  spec.vocab_file = "/nonexistent/vocab.json";
  spec.merge_file = "/nonexistent/merges.txt";
  std::string e = error_of([&] { load_tokenizer(spec); });
  EXPECT_NE(e.find("--vocab-file /nonexistent/vocab.json: "), std::string::npos) << e;
  // A directory where a file belongs costs one line, not a hang or a crash.
  spec.vocab_file = std::filesystem::temp_directory_path().string();
  e = error_of([&] { load_tokenizer(spec); });
  EXPECT_NE(e.find("not a regular file"), std::string::npos) << e;
}

TEST(ContentSha256, FilesCannotTradeBytes) {
  EXPECT_NE(kiln::data::content_sha256({"ab", "c"}), kiln::data::content_sha256({"a", "bc"}));
  EXPECT_EQ(kiln::data::content_sha256({"ab", "c"}), kiln::data::content_sha256({"ab", "c"}));
}
