// kiln generate: autoregressive sampling from a checkpoint. The generate
// graph has a fixed [1, seq_length] shape (so it compiles once); positions
// past the current length hold padding, which causal attention never lets
// earlier positions see.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "cli/commands.h"
#include "core/cpu_count.h"
#include "core/fallback_device.h"
#include "core/fatal_signal_report.h"
#include "core/registry.h"
#include "graph/executor.h"
#include "trainer/checkpoint/checkpoint_io.h"
#include "trainer/checkpoint/model_config.h"
#include "trainer/checkpoint/tokenizer_record.h"
#include "trainer/data/corpus.h"
#include "trainer/flags.h"
#include "trainer/model/model_state.h"
#include "trainer/model/step_graphs.h"
#include "trainer/rng.h"

namespace kiln::cli {

namespace {

// Samples a token from logits with temperature and top-k (k <= 0: all).
int32_t sample_token(const float* logits, int64_t vocab, double temperature, int64_t top_k, trainer::Rng& rng) {
  std::vector<int32_t> ids(static_cast<size_t>(vocab));
  for (int64_t i = 0; i < vocab; ++i) ids[static_cast<size_t>(i)] = static_cast<int32_t>(i);
  if (temperature <= 0)
    return *std::max_element(ids.begin(), ids.end(), [&](int32_t a, int32_t b) { return logits[a] < logits[b]; });
  int64_t k = top_k > 0 ? std::min(top_k, vocab) : vocab;
  std::partial_sort(ids.begin(), ids.begin() + k, ids.end(),
                    [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
  std::vector<double> p(static_cast<size_t>(k));
  double total = 0;
  for (int64_t i = 0; i < k; ++i) {
    p[static_cast<size_t>(i)] = std::exp((logits[ids[static_cast<size_t>(i)]] - logits[ids[0]]) / temperature);
    total += p[static_cast<size_t>(i)];
  }
  double r = rng.uniform_double() * total;
  for (int64_t i = 0; i < k; ++i) {
    r -= p[static_cast<size_t>(i)];
    if (r <= 0) return ids[static_cast<size_t>(i)];
  }
  return ids[static_cast<size_t>(k - 1)];
}

// The next-token logits of the prompt, for comparing kiln with another
// implementation (tests/tools/hf_gpt2_numpy.py): %.9g round-trips a float.
void write_logits(const std::string& path, const float* logits, int64_t vocab) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) throw Error("--logits-file " + path + ": cannot create it; point it at a writable path");
  std::fputc('[', f);
  for (int64_t i = 0; i < vocab; ++i) std::fprintf(f, "%s%.9g", i ? ", " : "", static_cast<double>(logits[i]));
  std::fputs("]\n", f);
  if (std::fclose(f) != 0) throw Error("--logits-file " + path + ": write failed; check free space");
}

// The model's tokenizer: the one the flags name, else the one the
// checkpoint records (either way checked against the record), else none
// for a byte-level model.
std::shared_ptr<const data::Tokenizer> generate_tokenizer(const data::TokenizerSpec& flags,
                                                          const trainer::LoadedCheckpoint& ck) {
  const bool has_record = ck.meta.contains("tokenizer");
  if (flags.type.empty() && !has_record) return nullptr;
  const nlohmann::json record = has_record ? ck.meta["tokenizer"] : nlohmann::json();
  if (!flags.type.empty()) {
    auto tokenizer = data::load_tokenizer(flags);
    if (has_record) trainer::check_same_tokenizer(record, *tokenizer, ck.dir);
    return tokenizer;
  }
  const data::TokenizerSpec recorded = trainer::tokenizer_spec_from_record(record, ck.dir);
  std::shared_ptr<const data::Tokenizer> tokenizer;
  try {
    tokenizer = data::load_tokenizer(recorded);
  } catch (const Error& e) {
    throw Error(std::string(e.what()) + " (the tokenizer recorded in checkpoint " + ck.dir +
                "; pass --tokenizer-type and its files to use a copy)");
  }
  trainer::check_same_tokenizer(record, *tokenizer, ck.dir);
  return tokenizer;
}

// The text goes out token by token; a write that fails (a full disk,
// /dev/full, a closed pipe's EPIPE with SIGPIPE ignored) ends the command
// with an error instead of a silent success with the text lost.
void flush_text() {
  if (std::fflush(stdout) != 0 || std::ferror(stdout) != 0)
    throw Error(std::string("cannot write the generated text to stdout: ") + std::strerror(errno) +
                "; check where stdout goes (a full disk?)");
}

}  // namespace

int run_generate(const std::vector<std::string>& args) {
  // A plugin that crashes names itself and the call in one line.
  install_fatal_signal_report();
  std::string load, prompt = "", backend = "cpu", logits_file;
  double temperature = 0.8;
  int64_t top_k = 40, max_new_tokens = 200, seed = 1234, device_index = 0, num_threads = 0;
  trainer::Flags flags("generate");
  flags.add("--load", &load, "checkpoint directory (a --save dir or an iter_XXXXXXX dir)");
  flags.add("--prompt", &prompt, "text to continue");
  flags.add("--temperature", &temperature, "sampling temperature (0: greedy)", trainer::Bounds::at_least(0));
  flags.add("--top-k", &top_k, "sample among the k most likely tokens (0: all)", trainer::Bounds::at_least(0));
  flags.add("--max-new-tokens", &max_new_tokens, "tokens to generate");
  flags.add("--seed", &seed, "sampling seed");
  flags.add("--backend", &backend, "backend plugin name or path");
  flags.add("--device", &device_index, "device index");
  flags.add("--num-threads", &num_threads, "CPU threads (0: all cores; capped at the CPUs)",
            trainer::Bounds::closed(0, kMaxThreadsFlag));
  flags.add("--logits-file", &logits_file,
            "write the logits at the prompt's last position to this file (JSON array, float32 as %.9g)");
  data::TokenizerSpec tokenizer_flags;
  flags.add("--tokenizer-type", &tokenizer_flags.type,
            "the model's tokenizer (default: the one its checkpoint records, if any)");
  flags.add("--vocab-file", &tokenizer_flags.vocab_file, "GPT-2 vocab.json (GPT2BPETokenizer)");
  flags.add("--merge-file", &tokenizer_flags.merge_file, "GPT-2 merges.txt (GPT2BPETokenizer)");
  flags.add("--tokenizer-model", &tokenizer_flags.tokenizer_model,
            "tokenizer.json or its directory, or tokenizer.model (SentencePiece types)");
  flags.add("--vocab-size", &tokenizer_flags.vocab_size, "NullTokenizer's N", trainer::Bounds::at_least(0));
  if (!flags.parse(args)) return 0;
  num_threads = cap_at_available_cpus("--num-threads", num_threads);
  data::infer_tokenizer_type(tokenizer_flags);  // else the files would be ignored for the checkpoint's record
  if (load.empty()) throw Error("kiln generate needs --load DIR (a checkpoint written by kiln train --save)");
  if (max_new_tokens < 0) throw Error("--max-new-tokens must not be negative");

  // The backend and device first: a typo there is reported before the
  // checkpoint is read.
  auto device = Registry::instance().open(backend, static_cast<int>(device_index), static_cast<int>(num_threads));
  FallbackDevice fallback;
  // The model only: sampling never reads the optimizer state.
  trainer::LoadedCheckpoint ck = trainer::load_checkpoint(load, trainer::CheckpointParts::Model);
  trainer::GptConfig cfg(trainer::checkpoint_architecture(ck));
  const auto tokenizer = generate_tokenizer(tokenizer_flags, ck);
  if (!tokenizer && cfg.vocab_size != 256)
    throw Error("checkpoint " + ck.dir + " has vocab " + std::to_string(cfg.vocab_size) +
                " and records no tokenizer; pass the --tokenizer-type and files it was trained with");
  if (tokenizer && tokenizer->vocab_size() > cfg.vocab_size)
    throw Error("--tokenizer-type " + tokenizer->type() + " has " + std::to_string(tokenizer->vocab_size()) +
                " tokens, more than checkpoint " + ck.dir + "'s vocab of " + std::to_string(cfg.vocab_size) +
                "; pass the tokenizer it was trained with");
  std::vector<int32_t> tokens;
  if (!tokenizer) {
    tokens = trainer::bytes_to_tokens(prompt.empty() ? std::string("\n") : prompt);
  } else {
    try {
      tokenizer->encode(prompt, tokens);
    } catch (const Error& e) {
      throw Error(std::string("--prompt: ") + e.what());
    }
    if (tokens.empty()) tokens.push_back(tokenizer->eod());  // an empty prompt starts a new document
  }
  // Sampling never picks the padding rows past the tokenizer's vocab.
  const int64_t sampled_vocab = tokenizer ? tokenizer->vocab_size() : cfg.vocab_size;
  // The decoded context so far: the prompt's (printed as given) and then
  // what has been printed of the generated tokens.
  std::string shown = tokenizer ? tokenizer->decode(tokens) : std::string();

  trainer::ModelState state(*device, cfg, /*with_optimizer=*/false);
  state.load_model(ck.model);
  graph::Executable exe(*device, trainer::build_generate(cfg), &fallback);
  state.bind(exe);

  const int64_t T = cfg.seq_length, V = cfg.vocab_size;
  trainer::Rng rng(static_cast<uint64_t>(seed));
  std::vector<int32_t> window(static_cast<size_t>(T));
  std::vector<float> logits(static_cast<size_t>(T * V));
  std::fputs(prompt.c_str(), stdout);
  for (int64_t n = 0; n < max_new_tokens; ++n) {
    // The last T tokens of the context; predict at the last real position.
    int64_t len = std::min<int64_t>(static_cast<int64_t>(tokens.size()), T);
    std::fill(window.begin(), window.end(), 0);
    std::copy(tokens.end() - len, tokens.end(), window.begin());
    exe.buffer("tokens")->write(window.data(), window.size() * 4);
    exe.run();
    exe.buffer("logits")->read(logits.data(), logits.size() * 4);
    if (n == 0 && !logits_file.empty()) write_logits(logits_file, logits.data() + (len - 1) * V, V);
    int32_t next = sample_token(logits.data() + (len - 1) * V, sampled_vocab, temperature, top_k, rng);
    tokens.push_back(next);
    if (!tokenizer) {
      std::string text = trainer::tokens_to_bytes({next});
      std::fwrite(text.data(), 1, text.size(), stdout);
    } else {
      // Decoding token by token would lose what depends on neighbours (a
      // SentencePiece word's leading space, a character split over byte
      // tokens): decode the whole context and print what is new.
      std::string text = tokenizer->decode(tokens);
      if (text.size() > shown.size() && text.compare(0, shown.size(), shown) == 0) {
        std::fwrite(text.data() + shown.size(), 1, text.size() - shown.size(), stdout);
        shown = std::move(text);
      }
    }
    flush_text();
  }
  std::fputc('\n', stdout);
  flush_text();
  return 0;
}

}  // namespace kiln::cli
