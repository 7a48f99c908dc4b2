// GPT-2 byte-level BPE: golden ids from ../shared, pre-tokenization cases
// checked against Python's `regex` module, merge semantics on a small
// synthetic vocab, and the errors for bad vocab/merges files.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "core/error.h"
#include "trainer/data/gpt2_tokenizer.h"

using kiln::data::Gpt2Tokenizer;

namespace {

const std::string kShared = KILN_TEST_SHARED_DIR;
const std::string kGpt2 = kShared + "/data/gpt2";

bool have_gpt2() { return std::filesystem::exists(kGpt2 + "/gpt2-vocab.json"); }

#define REQUIRE_GPT2() \
  if (!have_gpt2()) GTEST_SKIP() << "needs GPT-2 vocab/merges in " << kGpt2 << " (../shared beside the project)"

std::shared_ptr<const Gpt2Tokenizer> gpt2() {
  static std::shared_ptr<const Gpt2Tokenizer> t =
      Gpt2Tokenizer::load(kGpt2 + "/gpt2-vocab.json", kGpt2 + "/gpt2-merges.txt");
  return t;
}

// GPT-2's byte -> printable character map, written out independently here.
std::string byte_char(int b) {
  int cp = b;
  bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
  if (!printable) {
    int n = 0;
    for (int x = 0; x < b; ++x)
      if (!((x >= 33 && x <= 126) || (x >= 161 && x <= 172) || (x >= 174 && x <= 255))) ++n;
    cp = 256 + n;
  }
  std::string s;
  if (cp < 0x80)
    s += static_cast<char>(cp);
  else
    s += static_cast<char>(0xC0 | (cp >> 6)), s += static_cast<char>(0x80 | (cp & 0x3F));
  return s;
}
std::string encode_bytes(const std::string& raw) {
  std::string s;
  for (unsigned char c : raw) s += byte_char(c);
  return s;
}

// A small vocab: the 256 bytes (ids 0..255), then merged tokens in merge order, then <|endoftext|>.
struct Synthetic {
  std::string vocab, merges;
  std::map<std::string, int> ids;
};
Synthetic synthetic(const std::vector<std::pair<std::string, std::string>>& merges) {
  Synthetic s;
  nlohmann::json v = nlohmann::json::object();
  for (int b = 0; b < 256; ++b) v[byte_char(b)] = b, s.ids[std::string(1, static_cast<char>(b))] = b;
  int next = 256;
  s.merges = "#version: 0.2\n";
  for (const auto& [a, b] : merges) {
    s.merges += encode_bytes(a) + " " + encode_bytes(b) + "\n";
    if (!s.ids.count(a + b)) v[encode_bytes(a + b)] = next, s.ids[a + b] = next++;
  }
  v["<|endoftext|>"] = next;
  s.ids["<|endoftext|>"] = next;
  s.vocab = v.dump();
  return s;
}

std::vector<std::string> pieces(const std::string& text) {
  std::vector<std::string_view> p;
  Gpt2Tokenizer::pretokenize(text, p);
  return {p.begin(), p.end()};
}

}  // namespace

TEST(Gpt2Bpe, GoldenIdsAndRoundTrip) {
  REQUIRE_GPT2();
  std::ifstream in(kGpt2 + "/golden.jsonl");
  ASSERT_TRUE(in) << "golden.jsonl missing";
  auto tok = gpt2();
  EXPECT_EQ(tok->vocab_size(), 50257);
  EXPECT_EQ(tok->eod(), 50256);
  std::string line;
  int cases = 0;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    auto j = nlohmann::json::parse(line);
    const std::string text = j.at("text").get<std::string>();
    const std::vector<int32_t> want = j.at("ids").get<std::vector<int32_t>>();
    std::vector<int32_t> got = tok->encode(text);
    EXPECT_EQ(got, want) << "case " << cases << ": " << text;
    EXPECT_EQ(tok->decode(got), text) << "case " << cases;
    // Twice: the second encode comes from the piece cache.
    EXPECT_EQ(tok->encode(text), want) << "case " << cases << " (cached)";
    ++cases;
  }
  EXPECT_EQ(cases, 55);
}

TEST(Gpt2Bpe, PretokenizationMatchesTheRegexModule) {
  // Expected pieces from Python's regex module with GPT-2's pattern.
  EXPECT_EQ(pieces("Hello  world  "), (std::vector<std::string>{"Hello", " ", " world", "  "}));
  EXPECT_EQ(pieces("I'm ''s 'sure' x'LL"),
            (std::vector<std::string>{"I", "'m", " ''", "s", " '", "sure", "'", " x", "'", "LL"}));
  EXPECT_EQ(pieces("a\n\n\nb"), (std::vector<std::string>{"a", "\n\n", "\n", "b"}));
  EXPECT_EQ(pieces("  \t x"), (std::vector<std::string>{"  \t", " x"}));
  EXPECT_EQ(pieces("1234 5 ,,, !?"), (std::vector<std::string>{"1234", " 5", " ,,,", " !?"}));
  EXPECT_EQ(pieces("na\xC3\xAFve caf\xC3\xA9 \xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E"),
            (std::vector<std::string>{"na\xC3\xAFve", " caf\xC3\xA9", " \xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E"}));
  // U+00A0 is \s but not the optional ' ' prefix; a run keeps its last character back.
  EXPECT_EQ(pieces("x\xC2\xA0\xC2\xA0y"), (std::vector<std::string>{"x", "\xC2\xA0", "\xC2\xA0", "y"}));
  EXPECT_EQ(pieces("  "), (std::vector<std::string>{"  "}));
  EXPECT_EQ(pieces(" "), (std::vector<std::string>{" "}));
  EXPECT_EQ(pieces("tab\t\tend\n"), (std::vector<std::string>{"tab", "\t", "\t", "end", "\n"}));
  EXPECT_EQ(pieces("\xE2\x82\xAC"
                   "100 \xC2\xBD"),
            (std::vector<std::string>{"\xE2\x82\xAC", "100", " \xC2\xBD"}));
  EXPECT_TRUE(pieces("").empty());
}

TEST(Gpt2Bpe, MergesFollowRankOrderAndMergeEveryOccurrence) {
  // "a a" is the best merge, then "aa a", then "b aa".
  Synthetic s = synthetic({{"a", "a"}, {"aa", "a"}, {"b", "aa"}, {"h", "e"}, {"he", "l"}, {"hel", "l"}, {"hell", "o"}});
  Gpt2Tokenizer tok(s.vocab, s.merges);
  auto id = [&](const std::string& t) { return s.ids.at(t); };
  EXPECT_EQ(tok.encode("aaaa"), (std::vector<int32_t>{id("aa"), id("aa")}));  // all "a a" first
  EXPECT_EQ(tok.encode("aaa"), (std::vector<int32_t>{id("aaa")}));
  EXPECT_EQ(tok.encode("baa"), (std::vector<int32_t>{id("baa")}));
  EXPECT_EQ(tok.encode("hello"), (std::vector<int32_t>{id("hello")}));
  EXPECT_EQ(tok.encode("x<|endoftext|>y"), (std::vector<int32_t>{id("x"), id("<|endoftext|>"), id("y")}));
  EXPECT_EQ(tok.eod(), id("<|endoftext|>"));
}

TEST(Gpt2Bpe, HeapAndScanMergeLoopsAgree) {
  Synthetic s = synthetic({{"a", "b"},
                           {"b", "a"},
                           {"ab", "a"},
                           {"ba", "b"},
                           {"a", "a"},
                           {"aa", "b"},
                           {"ab", "ab"},
                           {"b", "b"},
                           {"bb", "a"},
                           {"aba", "b"}});
  Gpt2Tokenizer tok(s.vocab, s.merges);
  std::mt19937 rng(7);
  for (int i = 0; i < 3000; ++i) {
    std::string w(1 + rng() % 60, 'a');
    for (char& c : w) c = "abc"[rng() % 3];
    std::vector<int32_t> scan, heap;
    tok.bpe(w, scan, false);
    tok.bpe(w, heap, true);
    ASSERT_EQ(scan, heap) << w;
    EXPECT_EQ(tok.decode(scan), w);
  }
}

TEST(Gpt2Bpe, RealVocabHeapAndScanAgreeAndLongPiecesRoundTrip) {
  REQUIRE_GPT2();
  auto tok = gpt2();
  std::mt19937 rng(11);
  const std::string alphabet = "etaoinshrdlucmfwypvbgkqjxz";
  for (int i = 0; i < 2000; ++i) {
    std::string w(1 + rng() % 40, 'a');
    for (char& c : w) c = alphabet[rng() % alphabet.size()];
    std::vector<int32_t> scan, heap;
    tok->bpe(w, scan, false);
    tok->bpe(w, heap, true);
    ASSERT_EQ(scan, heap) << w;
  }
  std::string long_word(5000, 'b');
  for (size_t i = 0; i < long_word.size(); i += 7) long_word[i] = 'a';
  EXPECT_EQ(tok->decode(tok->encode(long_word)), long_word);
}

TEST(Gpt2Bpe, DecodeEncodeRoundTripsRandomUnicode) {
  REQUIRE_GPT2();
  auto tok = gpt2();
  const std::vector<std::string> atoms = {"a",
                                          "Z",
                                          "0",
                                          "9",
                                          " ",
                                          "  ",
                                          "\t",
                                          "\n",
                                          "\r\n",
                                          "'s",
                                          "'ll",
                                          "!",
                                          "?",
                                          ".",
                                          "\xC3\xA9",
                                          "\xE4\xB8\xAD",
                                          "\xF0\x9F\x98\x80",
                                          "\xC2\xA0",
                                          "\xE2\x80\xA8",
                                          "\xC2\x85",
                                          "<|endoftext|>",
                                          "<|",
                                          "|>",
                                          "\xEF\xBB\xBF"};
  std::mt19937 rng(3);
  for (int i = 0; i < 2000; ++i) {
    std::string text;
    for (int k = rng() % 50; k > 0; --k) text += atoms[rng() % atoms.size()];
    EXPECT_EQ(tok->decode(tok->encode(text)), text);
  }
}

TEST(Gpt2Bpe, EncodeIsThreadSafe) {
  REQUIRE_GPT2();
  auto tok = gpt2();
  std::string text;
  for (int i = 0; i < 300; ++i) text += "The quick brown fox " + std::to_string(i) + " jumps over the lazy dog.\n";
  const std::vector<int32_t> want = tok->encode(text);
  std::vector<std::vector<int32_t>> got(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int r = 0; r < 5; ++r) got[static_cast<size_t>(t)] = tok->encode(text);
    });
  for (auto& th : threads) th.join();
  for (const auto& g : got) EXPECT_EQ(g, want);
}

TEST(Gpt2Bpe, InvalidUtf8IsAnError) {
  Synthetic s = synthetic({{"a", "b"}});
  Gpt2Tokenizer tok(s.vocab, s.merges);
  for (const std::string& bad : {std::string("ab\xFF"), std::string("\xC3"), std::string("\xED\xA0\x80"),
                                 std::string("\xC0\xAF"), std::string("\xF4\x90\x80\x80")}) {
    try {
      tok.encode(bad);
      FAIL() << "no error for invalid UTF-8";
    } catch (const kiln::Error& e) {
      EXPECT_NE(std::string(e.what()).find("not valid UTF-8"), std::string::npos) << e.what();
    }
  }
  EXPECT_EQ(Gpt2Tokenizer::invalid_utf8_at("ok \xE2\x82\xAC then \xFF"), 12u);
  EXPECT_THROW(tok.decode(std::vector<int32_t>{999999}), kiln::Error);
}

TEST(Gpt2Bpe, VocabAndMergesErrorsAreClear) {
  Synthetic s = synthetic({{"a", "b"}});
  auto message = [](const std::string& vocab, const std::string& merges) {
    try {
      Gpt2Tokenizer t(vocab, merges, "vocab.json", "merges.txt");
    } catch (const kiln::Error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  // A merge whose tokens the vocab lacks: the files do not belong together.
  EXPECT_NE(message(s.vocab, "#version: 0.2\nx y\n").find("do not belong together"), std::string::npos);
  EXPECT_NE(message(s.vocab, "#version: 0.2\nx y\n").find("line 2"), std::string::npos);
  EXPECT_NE(message(s.vocab, "#version: 0.2\nab\n").find("not 'left right'"), std::string::npos);
  EXPECT_NE(message("{not json", s.merges).find("not valid JSON"), std::string::npos);
  EXPECT_NE(message("[1,2]", s.merges).find("not a JSON object"), std::string::npos);
  auto v = nlohmann::json::parse(s.vocab);
  v.erase("<|endoftext|>");
  EXPECT_NE(message(v.dump(), s.merges).find("<|endoftext|>"), std::string::npos);
  v = nlohmann::json::parse(s.vocab);
  v["zz"] = 3;  // duplicate id
  EXPECT_NE(message(v.dump(), s.merges).find("each once"), std::string::npos);
  EXPECT_THROW(Gpt2Tokenizer::load("/nonexistent/vocab.json", "/nonexistent/merges.txt"), kiln::Error);
  if (have_gpt2()) {
    // Real vocab with merges from another tokenizer.
    std::ifstream in(kGpt2 + "/gpt2-vocab.json");
    std::string real((std::istreambuf_iterator<char>(in)), {});
    EXPECT_NE(message(real, "#version: 0.2\n\xC4\xA0 zqxjzqxj\n").find("do not belong together"), std::string::npos);
  }
}
