// kiln preprocess: Megatron-LM's tools/preprocess_data.py, with its tokenizer flags.
#include "trainer/data/preprocess.h"
#include "trainer/data/stop_signals.h"
#include "trainer/data/tokenizer.h"

#include <thread>

#include "cli/commands.h"
#include "core/cpu_count.h"
#include "core/error.h"
#include "trainer/flags.h"

namespace kiln::cli {

int run_preprocess(const std::vector<std::string>& args) {
  data::PreprocessOptions opt;
  data::TokenizerSpec tokenizer_spec;
  tokenizer_spec.vocab_size = 786;  // preprocess_data.py's default --vocab-size (NullTokenizer)
  std::string dataset_impl = "mmap";
  int64_t workers = static_cast<int64_t>(std::max(1u, std::thread::hardware_concurrency()));
  int64_t partitions = 1;
  bool split_sentences = false;
  trainer::Flags f("preprocess");
  f.add("--input", &opt.input, "input .jsonl or .jsonl.gz, one JSON object per line");
  f.add("--output-prefix", &opt.output_prefix, "writes <prefix>_<key>_document.bin/.idx");
  f.add("--json-keys", &opt.json_keys, "keys to tokenize (a string, or a list of strings, per line)");
  f.add("--append-eod", &opt.append_eod, "append the tokenizer's EOD to every document that has tokens");
  f.add("--workers", &workers, "tokenizer threads (output is the same for any count; capped at the CPUs)",
        trainer::Bounds::closed(1, kMaxThreadsFlag));
  f.add("--log-interval", &opt.log_interval, "progress line every N documents (0: none)");
  f.add("--tokenizer-type", &tokenizer_spec.type, data::kTokenizerTypes);
  f.add("--vocab-file", &tokenizer_spec.vocab_file, "GPT-2 vocab.json (GPT2BPETokenizer)");
  f.add("--merge-file", &tokenizer_spec.merge_file, "GPT-2 merges.txt (GPT2BPETokenizer)");
  f.add("--tokenizer-model", &tokenizer_spec.tokenizer_model,
        "tokenizer.json or its directory (HuggingFaceTokenizer), tokenizer.model (SentencePiece types)");
  f.add("--vocab-size", &tokenizer_spec.vocab_size, "NullTokenizer's vocab: ids 0..N-1, EOD = N",
        trainer::Bounds::closed(1, INT32_MAX - 1));
  f.add("--skip-bad-lines", &opt.skip_bad_lines, "count and skip lines that are not JSON objects or not UTF-8");
  f.add("--dataset-impl", &dataset_impl, "mmap (the only format; accepted for older Megatron scripts)");
  f.add("--partitions", &partitions, "1 (accepted for Megatron scripts; kiln parallelises with --workers)");
  f.add("--split-sentences", &split_sentences, "not supported (needs NLTK's sentence splitter)");
  if (!f.parse(args)) return 0;
  opt.workers = cap_at_available_cpus("--workers", workers);
  if (opt.input.empty()) throw Error("kiln preprocess: --input FILE.jsonl is required");
  if (opt.output_prefix.empty()) throw Error("kiln preprocess: --output-prefix PREFIX is required");
  data::infer_tokenizer_type(tokenizer_spec);
  if (tokenizer_spec.type.empty())
    throw Error(std::string("kiln preprocess: --tokenizer-type is required (kiln has ") + data::kTokenizerTypes + ")");
  if (dataset_impl != "mmap")
    throw Error("kiln preprocess: --dataset-impl " + dataset_impl + " is not supported; use mmap");
  if (partitions != 1) throw Error("kiln preprocess: --partitions must be 1; use --workers for parallelism");
  if (split_sentences)
    throw Error("kiln preprocess: --split-sentences is not supported; GPT training uses whole documents");
  auto tokenizer = data::load_tokenizer(tokenizer_spec);
  // SIGTERM and Ctrl-C stop the run between lines, so the temporaries are
  // removed rather than left full-size beside the outputs.
  const data::StopSignals stop_signals;
  opt.stop_signal = &data::stop_signal;
  data::preprocess(opt, tokenizer);
  return 0;
}

}  // namespace kiln::cli
