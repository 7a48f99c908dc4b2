// Data pipeline throughput on tiny Shakespeare (../shared/data, or
// $KILN_SHARED_DIR/data):
//   BM_Encode/threads:N            GPT-2 BPE encode, MB/s (each thread encodes the whole text)
//   BM_EncodeNoCache               the same without the piece cache
//   BM_Pretokenize/scanner|pcre2   the pre-tokenization pattern alone: our scanner vs PCRE2 (UTF+UCP+JIT)
//   BM_Preprocess/workers:N        kiln preprocess of the corpus as JSONL (one paragraph per line), wall time
//   BM_SentencePieceEncode/model:M/threads:N  Llama2Tokenizer (libsentencepiece) encode of the
//                                  corpus's paragraphs, MB/s, with a model of tests/data/tokenizers/
//                                  (run from the build directory, where __FILE__ leads to them)
//   BM_HfEncode/tokenizer:0|1|2    HuggingFaceTokenizer encode, MB/s: GPT-2's vocab as a tokenizer.json,
//                                  the committed Llama-3-style tokenizer.json (Split scanner), and the
//                                  same with its Split regex forced onto PCRE2 (run from the build directory)
// PCRE2 is loaded at run time (libpcre2-8.so.0) and needs <pcre2.h> at build
// time; without either, its benchmark reports an error and the rest runs.
#include <benchmark/benchmark.h>
#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "trainer/data/gpt2_tokenizer.h"
#include "trainer/data/preprocess.h"
#include "trainer/data/tokenizers/hf/gpt2_tokenizer_json.h"
#include "trainer/data/tokenizers/hf/hf_tokenizer.h"
#include "trainer/data/tokenizers/sentencepiece_tokenizer.h"

#if __has_include(<pcre2.h>)
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#define KILN_HAVE_PCRE2_H 1
#endif

namespace fs = std::filesystem;
using kiln::data::Gpt2Tokenizer;

namespace {

fs::path shared_dir() {
  if (const char* env = std::getenv("KILN_SHARED_DIR")) return env;
  return fs::path(__FILE__).parent_path() / ".." / ".." / "shared";
}

const std::string& corpus() {
  static const std::string text = [] {
    std::ifstream in(shared_dir() / "data" / "corpus" / "tinyshakespeare.txt", std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), {});
  }();
  return text;
}

std::shared_ptr<const Gpt2Tokenizer> tokenizer() {
  static std::shared_ptr<const Gpt2Tokenizer> tok = [] {
    fs::path g = shared_dir() / "data" / "gpt2";
    if (!fs::exists(g / "gpt2-vocab.json")) return std::shared_ptr<const Gpt2Tokenizer>();
    return Gpt2Tokenizer::load((g / "gpt2-vocab.json").string(), (g / "gpt2-merges.txt").string());
  }();
  return tok;
}

bool ready(benchmark::State& state) {
  if (corpus().empty() || !tokenizer()) {
    state.SkipWithError("needs ../shared/data (or KILN_SHARED_DIR) with gpt2/ and corpus/tinyshakespeare.txt");
    return false;
  }
  return true;
}

void BM_Encode(benchmark::State& state) {
  if (!ready(state)) return;
  auto tok = tokenizer();
  std::vector<int32_t> ids;
  for (auto _ : state) {
    ids.clear();
    tok->encode(corpus(), ids);
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(corpus().size()));
  state.counters["tokens"] = static_cast<double>(ids.size());
}
BENCHMARK(BM_Encode)->Unit(benchmark::kMillisecond)->UseRealTime()->Threads(1)->Threads(2);

void BM_EncodeNoCache(benchmark::State& state) {
  if (!ready(state)) return;
  auto tok = tokenizer();
  std::vector<std::string_view> pieces;
  Gpt2Tokenizer::pretokenize(corpus(), pieces);
  std::vector<int32_t> ids;
  for (auto _ : state) {
    ids.clear();
    for (std::string_view p : pieces) tok->bpe(p, ids, false);
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(corpus().size()));
}
BENCHMARK(BM_EncodeNoCache)->Unit(benchmark::kMillisecond);

void BM_Pretokenize_scanner(benchmark::State& state) {
  if (!ready(state)) return;
  std::vector<std::string_view> pieces;
  for (auto _ : state) {
    pieces.clear();
    Gpt2Tokenizer::pretokenize(corpus(), pieces);
    benchmark::DoNotOptimize(pieces.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(corpus().size()));
  state.counters["pieces"] = static_cast<double>(pieces.size());
}
BENCHMARK(BM_Pretokenize_scanner)->Unit(benchmark::kMillisecond);

#ifdef KILN_HAVE_PCRE2_H
// The same pattern through PCRE2 with UTF, UCP and the JIT. \s is spelled
// out as Unicode White_Space (PCRE2's \s lacks U+0085) so both agree.
struct Pcre2 {
  void* lib = nullptr;
  decltype(&pcre2_compile_8) compile = nullptr;
  decltype(&pcre2_jit_compile_8) jit_compile = nullptr;
  decltype(&pcre2_match_data_create_from_pattern_8) md_create = nullptr;
  decltype(&pcre2_jit_match_8) jit_match = nullptr;
  decltype(&pcre2_get_ovector_pointer_8) ovector = nullptr;
  pcre2_code* code = nullptr;
  Pcre2() {
    lib = dlopen("libpcre2-8.so.0", RTLD_NOW);
    if (!lib) return;
    compile = reinterpret_cast<decltype(compile)>(dlsym(lib, "pcre2_compile_8"));
    jit_compile = reinterpret_cast<decltype(jit_compile)>(dlsym(lib, "pcre2_jit_compile_8"));
    md_create = reinterpret_cast<decltype(md_create)>(dlsym(lib, "pcre2_match_data_create_from_pattern_8"));
    jit_match = reinterpret_cast<decltype(jit_match)>(dlsym(lib, "pcre2_jit_match_8"));
    ovector = reinterpret_cast<decltype(ovector)>(dlsym(lib, "pcre2_get_ovector_pointer_8"));
    if (!compile || !jit_compile || !md_create || !jit_match || !ovector) return;
    const char* ws = "\\t-\\r \\x{85}\\x{a0}\\x{1680}\\x{2000}-\\x{200a}\\x{2028}\\x{2029}\\x{202f}\\x{205f}\\x{3000}";
    std::string pattern = std::string("'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^") + ws + "\\p{L}\\p{N}]+|[" +
                          ws + "]+(?![^" + ws + "])|[" + ws + "]+";
    int err = 0;
    PCRE2_SIZE off = 0;
    code = compile(reinterpret_cast<PCRE2_SPTR>(pattern.c_str()), PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP, &err,
                   &off, nullptr);
    if (code && jit_compile(code, PCRE2_JIT_COMPLETE) != 0) code = nullptr;
  }
};

void BM_Pretokenize_pcre2(benchmark::State& state) {
  if (!ready(state)) return;
  static Pcre2 re;
  if (!re.code) {
    state.SkipWithError("libpcre2-8.so.0 with JIT not available");
    return;
  }
  pcre2_match_data* md = re.md_create(re.code, nullptr);
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(corpus().data());
  const PCRE2_SIZE n = corpus().size();
  size_t pieces = 0;
  for (auto _ : state) {
    pieces = 0;
    for (PCRE2_SIZE pos = 0; pos < n;) {
      if (re.jit_match(re.code, subject, n, pos, 0, md, nullptr) < 0) break;
      pos = re.ovector(md)[1];
      ++pieces;
    }
    benchmark::DoNotOptimize(pieces);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(n));
  state.counters["pieces"] = static_cast<double>(pieces);
}
BENCHMARK(BM_Pretokenize_pcre2)->Unit(benchmark::kMillisecond);
#endif

void BM_Preprocess(benchmark::State& state) {
  if (!ready(state)) return;
  fs::path dir = fs::temp_directory_path() / ("kiln_bench_pre_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  {
    std::ofstream out(dir / "ts.jsonl", std::ios::binary);
    const std::string& t = corpus();
    for (size_t pos = 0; pos < t.size();) {
      size_t end = std::min(t.find("\n\n", pos), t.size());
      out << nlohmann::json{{"text", t.substr(pos, end - pos)}}.dump() << "\n";
      pos = end + 2;
    }
  }
  kiln::data::PreprocessOptions opt;
  opt.input = (dir / "ts.jsonl").string();
  opt.output_prefix = (dir / "out").string();
  opt.workers = state.range(0);
  opt.append_eod = true;
  opt.log = nullptr;
  for (auto _ : state) {
    // A fresh tokenizer each time, so the piece cache starts cold as in a real run.
    fs::path g = shared_dir() / "data" / "gpt2";
    state.PauseTiming();
    auto tok = Gpt2Tokenizer::load((g / "gpt2-vocab.json").string(), (g / "gpt2-merges.txt").string());
    state.ResumeTiming();
    kiln::data::preprocess(opt, tok);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(fs::file_size(dir / "ts.jsonl")));
  fs::remove_all(dir);
}
BENCHMARK(BM_Preprocess)->ArgName("workers")->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_TokenizerLoad(benchmark::State& state) {
  if (!ready(state)) return;
  fs::path g = shared_dir() / "data" / "gpt2";
  for (auto _ : state)
    benchmark::DoNotOptimize(Gpt2Tokenizer::load((g / "gpt2-vocab.json").string(), (g / "gpt2-merges.txt").string()));
}
BENCHMARK(BM_TokenizerLoad)->Unit(benchmark::kMillisecond);

// The corpus split at blank lines, the documents BM_Preprocess makes: the
// library's BPE slows down on very long inputs (1 MB in one call takes about
// 4x as long per byte as 10 KB), and real documents are short. Each thread
// encodes all of them, so MB/s is per core. Arg: 0 = the 2000-piece BPE
// model, 1 = the 1000-piece unigram model, both of tests/data/tokenizers/
// and trained on this corpus.
void BM_SentencePieceEncode(benchmark::State& state) {
  if (corpus().empty()) {
    state.SkipWithError("needs ../shared/data (or KILN_SHARED_DIR) with corpus/tinyshakespeare.txt");
    return;
  }
  static const std::vector<std::string_view> documents = [] {
    std::vector<std::string_view> docs;
    std::string_view text = corpus();
    for (size_t at = 0; at < text.size();) {
      size_t end = text.find("\n\n", at);
      end = end == std::string_view::npos ? text.size() : end + 2;
      docs.push_back(text.substr(at, end - at));
      at = end;
    }
    return docs;
  }();
  const char* model = state.range(0) == 0 ? "sp_bpe_identity.model" : "sp_unigram_squeeze.model";
  fs::path path = fs::path(__FILE__).parent_path() / ".." / "tests" / "data" / "tokenizers" / model;
  if (!fs::exists(path)) {
    state.SkipWithError("run from the build directory (the model is found beside this source file)");
    return;
  }
  auto tok =
      kiln::data::SentencePieceTokenizer::load(path.string(), kiln::data::SentencePieceTokenizer::Wrapper::kLlama2);
  std::vector<int32_t> ids;
  for (auto _ : state) {
    ids.clear();
    for (std::string_view doc : documents) tok->encode(doc, ids);
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(corpus().size()));
  state.counters["tokens"] = static_cast<double>(ids.size());
}
BENCHMARK(BM_SentencePieceEncode)
    ->ArgName("model")
    ->Arg(0)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Threads(1)
    ->Threads(2);

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

// 0: GPT-2 as tokenizer.json, 1: Llama-3-style, 2: Llama-3-style on PCRE2.
void BM_HfEncode(benchmark::State& state) {
  if (!ready(state)) return;
  using kiln::data::hf::HfTokenizer;
  static const std::shared_ptr<const HfTokenizer> toks[3] = {
      [] {
        fs::path g = shared_dir() / "data" / "gpt2";
        return std::make_shared<const HfTokenizer>(
            kiln::data::hf::gpt2_tokenizer_json(read_file(g / "gpt2-vocab.json"), read_file(g / "gpt2-merges.txt")), "",
            "gpt2 tokenizer.json");
      }(),
      HfTokenizer::load((fs::path(__FILE__).parent_path() / ".." / "tests/data/tokenizers/llama3_style").string()),
      HfTokenizer::load((fs::path(__FILE__).parent_path() / ".." / "tests/data/tokenizers/llama3_style").string(),
                        kiln::data::hf::HfOptions{true}),
  };
  const auto& tok = toks[state.range(0)];
  std::vector<int32_t> ids;
  for (auto _ : state) {
    ids.clear();
    tok->encode(corpus(), ids);
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) * static_cast<int64_t>(corpus().size()));
  state.counters["tokens"] = static_cast<double>(ids.size());
}
BENCHMARK(BM_HfEncode)->ArgName("tokenizer")->Arg(0)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
