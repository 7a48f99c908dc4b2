// Fuzz target: `kiln preprocess` input, i.e. the JSONL (or .jsonl.gz) line
// reader, the per-line JSON and UTF-8 checks, and the GPT-2 BPE tokenizer
// (trainer/data/preprocess.h, trainer/data/gpt2_tokenizer.h).
//
// Input: the bytes of a .jsonl file (gzip-compressed ones are read through
// zlib as `kiln preprocess` does).
//   1. As text: valid UTF-8 must encode, and decode back to the same bytes;
//      GPT-2's pre-tokenization must split it into pieces that concatenate
//      back to it; the two BPE merge loops (small and heap) must agree on
//      every piece. Invalid UTF-8 must be refused with kiln::Error.
//   2. As a file: preprocess() with --skip-bad-lines must finish or throw
//      kiln::Error, and the .bin/.idx it writes must open and hold the
//      documents and tokens it reported.
//
// The tokenizer is GPT-2's own from ../shared/data/gpt2 when present, else
// the small one tests/fuzz/gen_corpus.cpp wrote to tests/fuzz/data.
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "fuzz_util.h"
#include "trainer/data/gpt2_tokenizer.h"
#include "trainer/data/mmidx.h"
#include "trainer/data/preprocess.h"

namespace {
namespace fs = std::filesystem;
std::shared_ptr<const kiln::data::Gpt2Tokenizer> g_tok;
fs::path g_input, g_output;
}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const fs::path shared = fs::path(KILN_FUZZ_SHARED_DIR) / "data" / "gpt2";
  const fs::path tiny = fs::path(KILN_FUZZ_SOURCE_DIR) / "data";
  if (fs::exists(shared / "gpt2-vocab.json") && fs::exists(shared / "gpt2-merges.txt")) {
    g_tok =
        kiln::data::Gpt2Tokenizer::load((shared / "gpt2-vocab.json").string(), (shared / "gpt2-merges.txt").string());
  } else {
    g_tok = kiln::data::Gpt2Tokenizer::load((tiny / "tiny-vocab.json").string(), (tiny / "tiny-merges.txt").string());
  }
  g_input = kiln::fuzz::scratch_dir() / "input.jsonl";
  g_output = kiln::fuzz::scratch_dir() / "out";
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using kiln::data::Gpt2Tokenizer;
  const std::string_view text(reinterpret_cast<const char*>(data), size);

  // 1. The tokenizer on the raw bytes.
  if (Gpt2Tokenizer::invalid_utf8_at(text) == std::string_view::npos) {
    std::vector<int32_t> ids = g_tok->encode(text);
    for (int32_t id : ids) KILN_FUZZ_CHECK(id >= 0 && id < g_tok->vocab_size(), "id outside the vocab");
    KILN_FUZZ_CHECK(g_tok->decode(ids) == text, "decode(encode(text)) != text");
    std::vector<std::string_view> pieces;
    Gpt2Tokenizer::pretokenize(text, pieces);
    std::string joined;
    for (std::string_view p : pieces) {
      KILN_FUZZ_CHECK(!p.empty(), "empty pre-tokenization piece");
      joined += p;
      std::vector<int32_t> small, heap;
      g_tok->bpe(p, small, /*heap=*/false);
      g_tok->bpe(p, heap, /*heap=*/true);
      KILN_FUZZ_CHECK(small == heap, "the two BPE merge loops disagree on a piece");
    }
    KILN_FUZZ_CHECK(joined == text, "pre-tokenization pieces do not concatenate to the text");
  } else {
    bool threw = false;
    try {
      g_tok->encode(text);
    } catch (const kiln::Error&) {
      threw = true;
    }
    KILN_FUZZ_CHECK(threw, "invalid UTF-8 was encoded");
  }

  // 2. The bytes as a preprocess input file.
  kiln::fuzz::write_file(g_input, data, size);
  kiln::data::PreprocessOptions o;
  o.input = g_input.string();
  o.output_prefix = g_output.string();
  o.append_eod = true;
  o.workers = 1;
  o.log = nullptr;
  o.skip_bad_lines = true;
  o.chunk_bytes = 64;  // several chunks even for short inputs
  kiln::data::PreprocessResult r;
  try {
    r = kiln::data::preprocess(o, g_tok);
  } catch (const kiln::Error& e) {
    return 0;  // e.g. a line without the "text" key: refused with a message
  }
  KILN_FUZZ_CHECK(r.outputs.size() == 1, "one output per key");
  try {
    kiln::data::IndexedDataset ds(r.outputs[0]);
    KILN_FUZZ_CHECK(ds.num_documents() == r.documents, "document count differs from the report");
    int64_t tokens = 0;
    for (int32_t len : ds.sequence_lengths()) tokens += len;
    KILN_FUZZ_CHECK(tokens == r.tokens, "token count differs from the report");
  } catch (const kiln::Error& e) {
    KILN_FUZZ_CHECK(false, std::string("preprocess wrote a dataset that does not open: ") + e.what());
  }
  return 0;
}
