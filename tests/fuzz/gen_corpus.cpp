// Makes the fuzzers' seed corpora from kiln's own code, so the seeds are the
// bytes kiln really writes and reads (tests/fuzz/make-corpus.sh runs this,
// then adds files from the kiln binary itself: a checkpoint, a preprocessed
// dataset).
//
//   kiln_fuzz_gen_corpus OUT_DIR
//       writes OUT_DIR/corpus/<target>/... for every fuzz target and the
//       small GPT-2-style vocabulary in OUT_DIR/data (used by the jsonl
//       target when ../shared/data/gpt2 is absent)
//   kiln_fuzz_gen_corpus pack-mmidx PREFIX OUT_FILE
//       packs PREFIX.idx + PREFIX.bin into the mmidx target's input format
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "compiler_cache/entry_format.h"
#include "compiler_cache/key.h"
#include "core/hash.h"
#include "graph/graph.h"
#include "graph/graph_summary.h"
#include "graph/memory_plan.h"
#include "graph/passes.h"
#include "graph/serialize.h"
#include "kiln/plugin.h"
#include "trainer/checkpoint/model_config.h"
#include "trainer/checkpoint/safetensors.h"
#include "trainer/data/corpus.h"
#include "trainer/data/mmidx.h"
#include "trainer/model/step_graphs.h"

extern "C" const kiln_plugin_api* kiln_plugin_get_api(void);

namespace {

namespace fs = std::filesystem;
using kiln::graph::Graph;

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + p.string());
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write_file(const fs::path& p, const void* data, size_t size) {
  fs::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!out) throw std::runtime_error("cannot write " + p.string());
}
void write_file(const fs::path& p, const std::string& s) { write_file(p, s.data(), s.size()); }

// ---------------------------------------------------------------- ir

std::vector<uint8_t> serialize(const Graph& g) {
  Graph live = kiln::graph::eliminate_dead_code(g);
  return kiln::graph::serialize(live, kiln::graph::plan_memory(live));
}

// One small graph per group of ops, as the graph builder makes them.
std::map<std::string, Graph> op_graphs() {
  std::map<std::string, Graph> out;
  {
    Graph g;
    auto a = g.input("a", KILN_F32, {3, 4});
    auto b = g.input("b", KILN_F32, {4});
    auto y = g.gelu(g.scale(g.mul(g.add(a, b), b), 0.5f));
    g.output("y", g.gelu_grad(y, g.fill({3, 4}, 1.0f)));
    out["elementwise"] = std::move(g);
  }
  {
    Graph g;
    auto a = g.input("a", KILN_F32, {2, 3, 4});
    auto b = g.input("b", KILN_F32, {2, 5, 4});
    g.output("y", g.matmul(a, b, false, true));
    out["matmul"] = std::move(g);
  }
  {
    Graph g;
    auto table = g.input("table", KILN_F32, {8, 4});
    auto ids = g.input("ids", KILN_I32, {2, 3});
    auto e = g.embedding(table, ids);
    g.output("y", e);
    g.output("dtable", g.embedding_grad(e, ids, 8));
    out["embedding"] = std::move(g);
  }
  {
    Graph g;
    auto x = g.input("x", KILN_F32, {2, 4});
    auto gamma = g.input("gamma", KILN_F32, {4});
    auto beta = g.input("beta", KILN_F32, {4});
    auto y = g.layernorm(x, gamma, beta, 1e-5f);
    auto grads = g.layernorm_grad(x, gamma, y, 1e-5f);
    const char* names[] = {"dx", "dgamma", "dbeta"};
    for (size_t i = 0; i < grads.size() && i < 3; ++i) g.output(names[i], grads[i]);
    out["layernorm"] = std::move(g);
  }
  {
    Graph g;
    auto x = g.input("x", KILN_F32, {2, 3, 3});
    auto y = g.causal_softmax(x, 0.5f);
    g.output("dx", g.softmax_grad(y, x, 0.5f));
    out["softmax"] = std::move(g);
  }
  {
    Graph g;
    auto logits = g.input("logits", KILN_F32, {3, 5});
    auto targets = g.input("targets", KILN_I32, {3});
    auto loss = g.cross_entropy(logits, targets);
    g.output("loss", loss);
    g.output("dlogits", g.cross_entropy_grad(logits, targets, loss));
    out["cross_entropy"] = std::move(g);
  }
  {
    Graph g;
    auto x = g.input("x", KILN_F32, {2, 3, 4});
    auto parts = g.split(x, 2, 2);
    auto c = g.concat({parts[1], parts[0]}, 2);
    auto p = g.permute(g.reshape(c, {6, 4}), {1, 0});
    g.output("s", g.sum_to(p, {6}));
    g.output("q", g.sum_squares(x));
    out["layout"] = std::move(g);
  }
  {
    Graph g;
    auto p = g.input("param", KILN_F32, {4});
    auto grad = g.input("grad", KILN_F32, {4});
    auto m = g.input("m", KILN_F32, {4});
    auto v = g.input("v", KILN_F32, {4});
    auto h = g.input("hparams", KILN_F32, {5});
    auto r = g.adamw(p, grad, m, v, h, 0.9f, 0.999f, 1e-8f, true);
    g.output("param.out", r[0], "param");
    g.output("m.out", r[1], "m");
    g.output("v.out", r[2], "v");
    out["adamw"] = std::move(g);
  }
  {
    // Every conversion between the float dtypes.
    Graph g;
    auto b = g.input("b", KILN_BF16, {3, 4});
    auto h = g.input("h", KILN_F16, {3, 4});
    g.output("b_to_h", g.cast(b, KILN_F16));
    g.output("h_to_b", g.cast(h, KILN_BF16));
    g.output("wide", g.cast(g.cast(b, KILN_F32), KILN_F16));
    out["cast"] = std::move(g);
  }
  return out;
}

// A small model's ops in bf16 and in f16 storage, with the f32 loss and
// norm the op rules give them: seeds for the IR reader (.ir only; the cast
// graph above already seeds the executable readers with 16-bit values).
std::map<std::string, Graph> low_precision_graphs() {
  std::map<std::string, Graph> out;
  for (kiln_dtype dtype : {KILN_BF16, KILN_F16}) {
    Graph g;
    auto x = g.input("x", dtype, {2, 3, 4});
    auto w = g.input("w", dtype, {2, 4, 4});
    auto gamma = g.input("gamma", dtype, {4});
    auto targets = g.input("targets", KILN_I32, {6});
    auto y = g.layernorm(g.gelu(g.matmul(x, w)), gamma, gamma, 1e-5f);
    auto logits = g.reshape(g.permute(y, {0, 1, 2}), {6, 4});
    g.output("loss", g.cross_entropy(logits, targets));
    g.output("norm", g.sum_squares(g.cast(y, KILN_F32)));
    out[std::string("low_precision_") + kiln_dtype_name(dtype)] = std::move(g);
  }
  return out;
}

kiln::trainer::GptConfig tiny_gpt() {
  kiln::trainer::GptConfig c;
  c.num_layers = 1;
  c.hidden_size = 8;
  c.num_attention_heads = 2;
  c.vocab_size = 16;
  c.seq_length = 4;
  return c;
}

void write_ir(const fs::path& dir) {
  using namespace kiln::trainer;
  const GptConfig cfg = tiny_gpt();
  std::map<std::string, Graph> graphs = op_graphs();
  graphs["gpt_train_step"] = build_train_step(cfg, 2, GradMode::Overwrite);
  graphs["gpt_eval_step"] = build_eval_step(cfg, 2);
  graphs["gpt_grad_norm"] = build_grad_norm(cfg);
  graphs["gpt_optimizer"] = build_optimizer_step(cfg, {});
  graphs["gpt_generate"] = build_generate(cfg);

  const kiln_plugin_api* api = kiln_plugin_get_api();
  for (const auto& [name, g] : graphs) {
    const std::vector<uint8_t> ir = serialize(g);
    write_file(dir / (name + ".ir"), ir.data(), ir.size());
    // What the CPU plugin compiles it to: the bytes a compile cache would
    // hand back to load (smaller graphs only, to keep the corpus small).
    if (ir.size() > 2048) continue;
    kiln_compile_args c{};
    c.struct_size = sizeof(c);
    c.ir = ir.data();
    c.ir_size = ir.size();
    if (kiln_error* e = api->compile(&c)) {
      std::string m = api->error_message(e);
      api->error_destroy(e);
      throw std::runtime_error(std::string("cpu compile of ").append(name).append(" failed: ").append(m));
    }
    write_file(dir / (name + ".cpuexe"), c.executable, c.executable_size);
    api->executable_bytes_free(c.executable);
  }
  for (const auto& [name, g] : low_precision_graphs()) {
    const std::vector<uint8_t> ir = serialize(g);
    write_file(dir / (name + ".ir"), ir.data(), ir.size());
  }
}

// ---------------------------------------------------------------- cache entries

// Compile-cache entries as kiln writes them (compiler_cache/entry_format.h), for the
// small graphs the CPU plugin compiles above; metadata without times or
// host names, so the corpus is deterministic.
void write_cache_entries(const fs::path& dir) {
  const kiln_plugin_api* api = kiln_plugin_get_api();
  std::map<std::string, Graph> graphs = op_graphs();
  for (const auto& [name, g] : graphs) {
    const std::vector<uint8_t> ir = serialize(g);
    if (ir.size() > 2048) continue;
    kiln_compile_args c{};
    c.struct_size = sizeof(c);
    c.ir = ir.data();
    c.ir_size = ir.size();
    if (kiln_error* e = api->compile(&c)) {
      api->error_destroy(e);
      throw std::runtime_error("cpu compile of " + name + " failed");
    }
    kiln::compiler_cache::KeyParts parts;
    parts.backend = "cpu";
    parts.compiler_version = api->compiler_version();
    parts.device_fingerprint = std::string(64, '0');
    parts.ir_hash = kiln::sha256_hex(ir.data(), ir.size());
    kiln::compiler_cache::Entry entry;
    entry.key = kiln::compiler_cache::compute_key(parts);
    entry.ir = ir;
    entry.executable.assign(c.executable, c.executable + c.executable_size);
    api->executable_bytes_free(c.executable);
    entry.metadata = nlohmann::json{{"key_parts", kiln::compiler_cache::key_parts_json(parts)},
                                    {"summary", kiln::graph::graph_summary(g)}}
                         .dump();
    const std::vector<uint8_t> bytes = kiln::compiler_cache::encode_entry(entry);
    write_file(dir / (name + ".entry"), bytes.data(), bytes.size());
  }
}

// ---------------------------------------------------------------- mmidx

void pack_mmidx(const std::string& prefix, const fs::path& out) {
  const std::string idx = read_file(prefix + ".idx"), bin = read_file(prefix + ".bin");
  std::string packed(4, '\0');
  const uint32_t n = static_cast<uint32_t>(idx.size());
  std::memcpy(packed.data(), &n, 4);
  packed += idx;
  packed += bin;
  write_file(out, packed);
}

void write_mmidx(const fs::path& dir, const fs::path& tmp) {
  using kiln::data::IndexedDatasetWriter;
  using kiln::data::TokenDtype;
  struct Doc {
    std::vector<int32_t> tokens, lengths;
  };
  const std::vector<Doc> docs = {
      {{1, 2, 3, 4, 5}, {5}},
      {{6, 7, 8, 9, 10, 11, 12}, {3, 4}},  // two sequences (sentences)
      {{}, {}},                            // an empty document
      {{300, 40000, 2}, {3}},
  };
  const std::pair<const char*, std::vector<size_t>> sets[] = {
      {"empty", {}}, {"one_doc", {0}}, {"several", {0, 1, 2, 3}}, {"two_sentences", {1}}};
  for (TokenDtype dtype : {TokenDtype::U16, TokenDtype::I32}) {
    for (const auto& [name, which] : sets) {
      const std::string prefix = (tmp / name).string();
      {
        IndexedDatasetWriter w(prefix, dtype);
        for (size_t d : which) w.add_document(docs[d].tokens.data(), docs[d].lengths.data(), docs[d].lengths.size());
        w.finalize();
      }
      pack_mmidx(prefix, dir / (std::string(name) + (dtype == TokenDtype::U16 ? "_u16" : "_i32") + ".mmidx"));
    }
  }
}

// ---------------------------------------------------------------- safetensors

void write_safetensors_corpus(const fs::path& dir, const fs::path& tmp) {
  using kiln::trainer::SafeTensor;
  const std::map<std::string, std::map<std::string, SafeTensor>> files = {
      {"empty", {}},
      {"f32", {{"w", SafeTensor::from_f32({2, 3}, {1, 2, 3, 4, 5, 6})}}},
      {"mixed",
       {{"layer.weight", SafeTensor::from_f32({2, 2}, {0.5f, -1, 2, 3})},
        {"ids", SafeTensor::from_i32({3}, {7, 8, 9})},
        {"step", SafeTensor::from_i64({}, {42})},
        {"nothing", SafeTensor::from_f32({0, 4}, {})}}},
  };
  for (const auto& [name, tensors] : files) {
    const fs::path p = tmp / (name + ".safetensors");
    kiln::trainer::write_safetensors(
        p.string(), tensors,
        name == "empty" ? std::map<std::string, std::string>{} : std::map<std::string, std::string>{{"format", "pt"}});
    write_file(dir / (name + ".safetensors"), read_file(p));
  }
}

// ---------------------------------------------------------------- checkpoint meta

void write_meta(const fs::path& dir) {
  // As trainer.cpp saves it (make-corpus.sh adds one from a real run).
  nlohmann::json meta = {{"config", kiln::trainer::model_config_json(tiny_gpt())},
                         {"iteration", 3},
                         {"consumed_samples", 24},
                         {"skipped_iterations", 0},
                         {"nan_iterations", 0},
                         {"seed", 1234}};
  write_file(dir / "meta.json", meta.dump(2) + "\n");
  write_file(dir / "latest.txt", std::string("7"));
}

// ---------------------------------------------------------------- jsonl

std::string jsonl_line(const nlohmann::json& j) { return j.dump() + "\n"; }

void write_jsonl(const fs::path& dir) {
  const std::string text = kiln::trainer::generate_corpus(600, 7);
  std::vector<std::string> paragraphs;
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find("\n\n", start);
    if (end == std::string::npos) end = text.size();
    if (end > start) paragraphs.push_back(text.substr(start, end - start));
    start = end + 2;
  }
  std::string plain;
  for (const std::string& p : paragraphs) plain += jsonl_line({{"text", p}});
  write_file(dir / "stories.jsonl", plain);

  std::string varied;
  varied += jsonl_line({{"text", "Hello world! It's 2024, isn't it?  Tabs\tand\r\nnewlines."}});
  varied += jsonl_line(
      {{"text",
        "Unicode: caf\u00e9, \u00fcber, \u65e5\u672c\u8a9e, \u0645\u0631\u062d\u0628\u0627, emoji \U0001F600."}});
  varied += jsonl_line({{"text", "one document<|endoftext|>another"}});
  varied += jsonl_line({{"text", nlohmann::json::array({"First sentence.", " Second sentence."})}});
  varied += "\n";                                   // blank line
  varied += "{\"text\": \"broken\n";                // bad JSON (skipped with --skip-bad-lines)
  varied += jsonl_line({{"id", 5}, {"text", ""}});  // empty text
  varied += jsonl_line({{"text", "   leading and trailing spaces   "}, {"meta", {{"src", "gen"}}}});
  write_file(dir / "varied.jsonl", varied);

  // The same as .jsonl.gz: preprocess reads gzip through zlib.
  const fs::path gz = dir / "stories.jsonl.gz";
  gzFile f = gzopen(gz.c_str(), "wb9");
  if (f == nullptr || gzwrite(f, plain.data(), static_cast<unsigned>(plain.size())) != static_cast<int>(plain.size()) ||
      gzclose(f) != Z_OK)
    throw std::runtime_error("cannot write " + gz.string());
}

// A small GPT-2-style vocabulary: the 256 byte tokens (GPT-2's
// bytes_to_unicode spelling), merges learned from the built-in corpus by
// plain BPE, and <|endoftext|>.
void write_tiny_vocab(const fs::path& dir) {
  std::vector<std::string> byte_str(256);
  int extra = 0;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
    const int cp = printable ? b : 256 + extra++;
    std::string s;
    if (cp < 0x80) {
      s += static_cast<char>(cp);
    } else {
      s += static_cast<char>(0xC0 | (cp >> 6));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    }
    byte_str[static_cast<size_t>(b)] = s;
  }
  nlohmann::json vocab = nlohmann::json::object();
  for (int b = 0; b < 256; ++b) vocab[byte_str[static_cast<size_t>(b)]] = b;

  // Words as sequences of byte-token strings, counted.
  const std::string text = kiln::trainer::generate_corpus(20000, 1);
  std::map<std::vector<std::string>, int> words;
  std::vector<std::string> word;
  for (size_t i = 0; i <= text.size(); ++i) {
    const bool split = i == text.size() || text[i] == ' ' || text[i] == '\n';
    if (split && !word.empty()) ++words[word], word.clear();
    if (i < text.size() && text[i] != '\n') word.push_back(byte_str[static_cast<unsigned char>(text[i])]);
  }
  std::string merges = "#version: 0.2\n";
  int next_id = 256;
  for (int round = 0; round < 60; ++round) {
    std::map<std::pair<std::string, std::string>, int> pairs;
    for (const auto& [w, n] : words)
      for (size_t i = 0; i + 1 < w.size(); ++i) pairs[{w[i], w[i + 1]}] += n;
    if (pairs.empty()) break;
    auto best =
        std::max_element(pairs.begin(), pairs.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
    const auto [a, b] = best->first;
    merges.append(a).append(" ").append(b).append("\n");
    if (!vocab.contains(a + b)) vocab[a + b] = next_id++;
    std::map<std::vector<std::string>, int> merged;
    for (const auto& [w, n] : words) {
      std::vector<std::string> m;
      for (size_t i = 0; i < w.size(); ++i) {
        if (i + 1 < w.size() && w[i] == a && w[i + 1] == b) {
          m.push_back(a + b);
          ++i;
        } else {
          m.push_back(w[i]);
        }
      }
      merged[m] += n;
    }
    words = std::move(merged);
  }
  vocab["<|endoftext|>"] = next_id;
  write_file(dir / "tiny-vocab.json", vocab.dump() + "\n");
  write_file(dir / "tiny-merges.txt", merges);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc == 3 && std::string(argv[1]) == "cache-entries") {
      write_cache_entries(fs::path(argv[2]) / "corpus" / "cache_entry");
      return 0;
    }
    if (argc == 4 && std::string(argv[1]) == "pack-mmidx") {
      pack_mmidx(argv[2], argv[3]);
      return 0;
    }
    if (argc != 2) {
      std::fprintf(stderr, "usage: %s OUT_DIR | pack-mmidx PREFIX OUT_FILE | cache-entries OUT_DIR\n", argv[0]);
      return 2;
    }
    const fs::path out(argv[1]);
    const fs::path tmp = fs::temp_directory_path() / ("kiln-gen-corpus-" + std::to_string(::getpid()));
    fs::create_directories(tmp);
    write_ir(out / "corpus" / "ir");
    write_mmidx(out / "corpus" / "mmidx", tmp);
    write_safetensors_corpus(out / "corpus" / "safetensors", tmp);
    write_meta(out / "corpus" / "checkpoint_meta");
    write_jsonl(out / "corpus" / "jsonl");
    write_cache_entries(out / "corpus" / "cache_entry");
    write_tiny_vocab(out / "data");
    fs::remove_all(tmp);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kiln_fuzz_gen_corpus: %s\n", e.what());
    return 1;
  }
}
