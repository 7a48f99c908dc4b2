// `kiln preprocess`: JSONL (or .jsonl.gz) -> Megatron .bin/.idx, as
// Megatron-LM's tools/preprocess_data.py. Lines are read in chunks by the
// calling thread, tokenized by a pool of workers, and written back in input
// order, so the output does not depend on the worker count; at most a few
// chunks per worker are in flight, so memory does not grow with the input.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "trainer/data/tokenizer.h"

namespace kiln::data {

struct PreprocessOptions {
  std::string input;
  std::string output_prefix;
  std::vector<std::string> json_keys{"text"};
  bool append_eod = false;
  int64_t workers = 1;
  int64_t log_interval = 1000;           // documents between progress lines (0: none)
  bool skip_bad_lines = false;           // malformed JSON / invalid UTF-8 lines are counted and skipped
  size_t chunk_bytes = size_t{1} << 18;  // lines per task: ~256 KiB
  std::FILE* log = stderr;               // progress and summary lines (nullptr: quiet)
  int (*stop_signal)() = nullptr;        // non-zero: stop, clean up and throw (polled between lines)
};

struct PreprocessResult {
  int64_t documents = 0;      // lines that became documents
  int64_t skipped_lines = 0;  // bad lines skipped under skip_bad_lines
  int64_t blank_lines = 0;
  int64_t tokens = 0;  // per key, summed
  int64_t bytes = 0;   // input bytes (uncompressed)
  double seconds = 0;
  std::vector<std::string> outputs;  // the .bin/.idx prefixes written, one per key
};

// Throws kiln::Error for unreadable input, a bad line (naming its number;
// unless skip_bad_lines), a missing key or a non-string value (naming the
// line and the keys it has). Nothing is published unless all of it succeeds.
PreprocessResult preprocess(const PreprocessOptions& options, std::shared_ptr<const Tokenizer> tokenizer);

}  // namespace kiln::data
