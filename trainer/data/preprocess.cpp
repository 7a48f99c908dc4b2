#include "trainer/data/preprocess.h"

#include <chrono>
#include <cstring>
#include <deque>
#include <functional>
#include <future>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/thread_pool.h"
#include "trainer/data/gpt2_tokenizer.h"
#include "trainer/data/input_bytes.h"
#include "trainer/data/mmidx.h"
#include "trainer/data/stale_temporaries.h"
#include "trainer/data/stop_signals.h"

namespace kiln::data {

namespace {

using Clock = std::chrono::steady_clock;

// A message quotes at most this much of the input: nlohmann's parse errors
// quote the token they stopped in, which may be a whole 10 MB line.
std::string clipped(const std::string& text, size_t max_bytes = 160) {
  if (text.size() <= max_bytes) return text;
  size_t cut = max_bytes;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 character
  return text.substr(0, cut) + "... (" + std::to_string(text.size()) + " bytes in all)";
}

// Reads lines from a plain or gzip file (trainer/data/input_bytes.h).
class LineReader {
 public:
  LineReader(const std::string& path, std::function<void()> while_waiting) : bytes_in_(path, std::move(while_waiting)) {
    buf_.resize(1 << 18);
  }
  // Next line without its '\n' (and '\r'); false at the end.
  bool next(std::string& line) {
    line.clear();
    bool got = false;
    while (true) {
      if (pos_ == len_) {
        if (eof_) return got;
        const size_t n = bytes_in_.read(buf_.data(), buf_.size());
        if (n == 0) {
          eof_ = true;
          return got;
        }
        pos_ = 0;
        len_ = n;
      }
      got = true;
      const char* start = buf_.data() + pos_;
      if (const void* nl = std::memchr(start, '\n', len_ - pos_)) {
        size_t k = static_cast<size_t>(static_cast<const char*>(nl) - start);
        line.append(start, k);
        pos_ += k + 1;
        bytes_ += k + 1;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        return true;
      }
      line.append(start, len_ - pos_);
      bytes_ += len_ - pos_;
      pos_ = len_;
    }
  }
  int64_t bytes() const { return static_cast<int64_t>(bytes_); }

 private:
  InputBytes bytes_in_;
  std::vector<char> buf_;
  size_t pos_ = 0, len_ = 0, bytes_ = 0;
  bool eof_ = false;
};

struct Chunk {
  int64_t first_line = 0;  // 1-based number of the first line
  int64_t bytes = 0;       // input bytes, newlines included
  std::string text;
  std::vector<size_t> ends;  // end offset of each line in text
};

struct KeyOutput {
  std::vector<int32_t> tokens;
  std::vector<int32_t> lengths;    // sequence lengths, all documents
  std::vector<uint32_t> doc_seqs;  // sequences per document

  struct Mark {
    size_t tokens, lengths, doc_seqs;
  };
  Mark mark() const { return {tokens.size(), lengths.size(), doc_seqs.size()}; }
  void undo(const Mark& m) {
    tokens.resize(m.tokens);
    lengths.resize(m.lengths);
    doc_seqs.resize(m.doc_seqs);
  }
};

struct ChunkResult {
  std::vector<KeyOutput> keys;
  int64_t documents = 0, blank = 0, skipped = 0, bytes = 0;
  std::vector<std::string> skipped_messages;  // the first few, for warnings
  std::string fatal;                          // first error that stops the run

  // A line that cannot become a document: skipped under --skip-bad-lines
  // (the first few remembered for the warning), else fatal. Returns
  // whether the run stops.
  bool bad_line(const std::string& problem, bool skip) {
    if (!skip) {
      fatal = problem + "; fix it or pass --skip-bad-lines to skip such lines";
      return true;
    }
    ++skipped;
    if (skipped_messages.size() < 5) skipped_messages.push_back(problem);
    return false;
  }
};

std::string json_type(const nlohmann::json& j) { return j.type_name(); }

// The documents of one parsed line, one per key, appended to r.keys.
void encode_line(const nlohmann::json& doc, const PreprocessOptions& opt, const Tokenizer& tok, ChunkResult& r) {
  for (size_t k = 0; k < opt.json_keys.size(); ++k) {
    const nlohmann::json& value = doc[opt.json_keys[k]];
    KeyOutput& out = r.keys[k];
    uint32_t seqs = 0;
    size_t doc_start = out.tokens.size();
    auto add_sentence = [&](const std::string& text) {
      size_t before = out.tokens.size();
      tok.encode(text, out.tokens);
      if (out.tokens.size() > before) {
        out.lengths.push_back(static_cast<int32_t>(out.tokens.size() - before));
        ++seqs;
      }
    };
    if (value.is_string()) {
      add_sentence(value.get_ref<const std::string&>());
    } else {
      for (const auto& s : value) add_sentence(s.get_ref<const std::string&>());
    }
    if (opt.append_eod && out.tokens.size() > doc_start) {
      out.tokens.push_back(tok.eod());
      ++out.lengths.back();
    }
    out.doc_seqs.push_back(seqs);
  }
}

ChunkResult process_chunk(const Chunk& chunk, const PreprocessOptions& opt, const Tokenizer& tok) {
  ChunkResult r;
  r.bytes = chunk.bytes;
  r.keys.resize(opt.json_keys.size());
  std::vector<int32_t> ids;
  size_t begin = 0;
  for (size_t li = 0; li < chunk.ends.size(); ++li) {
    const int64_t line_no = chunk.first_line + static_cast<int64_t>(li);
    std::string_view line(chunk.text.data() + begin, chunk.ends[li] - begin);
    begin = chunk.ends[li];
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) {
      ++r.blank;
      continue;
    }
    std::string bad;
    nlohmann::json doc;
    if (size_t at = Gpt2Tokenizer::invalid_utf8_at(line); at != std::string_view::npos) {
      bad = "line " + std::to_string(line_no) + " of " + opt.input + " is not valid UTF-8 (byte " +
            std::to_string(at + 1) + " of the line)";
    } else {
      try {
        doc = nlohmann::json::parse(line);
        if (!doc.is_object())
          bad = "line " + std::to_string(line_no) + " of " + opt.input + " is a JSON " + json_type(doc) +
                ", not an object";
      } catch (const nlohmann::json::exception& e) {
        // A syntax error, or a number too large for a double ("1e999"): both
        // make the line unreadable, not the run.
        std::string what = e.what();
        // nlohmann says "parse error at line 1, column C: ..."; the line is ours.
        if (size_t p = what.find("column "); p != std::string::npos)
          what = "at " + what.substr(p);
        else if (size_t q = what.find("] "); what.rfind("[json.exception.", 0) == 0 && q != std::string::npos)
          what = what.substr(q + 2);
        bad = "line " + std::to_string(line_no) + " of " + opt.input + " is not valid JSON (" + clipped(what) + ")";
      }
    }
    if (!bad.empty()) {
      if (r.bad_line(bad, opt.skip_bad_lines)) return r;
      continue;
    }
    // Check every key before producing anything for this line.
    for (const std::string& key : opt.json_keys) {
      auto it = doc.find(key);
      std::string problem;
      if (it == doc.end()) {
        std::string keys;
        for (auto k = doc.begin(); k != doc.end(); ++k) keys += (keys.empty() ? "" : ", ") + ("'" + k.key() + "'");
        problem = "has no key '" + key + "' (it has " + (keys.empty() ? std::string("no keys") : clipped(keys)) +
                  "); choose the key with --json-keys";
      } else if (!it->is_array()) {
        if (!it->is_string()) problem = "has '" + key + "' as a JSON " + json_type(*it) + ", not a string";
      } else {
        // A list of strings is accepted (one sentence each): name the first
        // element that is not one, which the line as a whole is not to blame for.
        for (size_t i = 0; i < it->size() && problem.empty(); ++i)
          if (!(*it)[i].is_string())
            problem = "has '" + key + "' as a JSON array whose element " + std::to_string(i + 1) + " is a JSON " +
                      json_type((*it)[i]) + ", not a string; give a string or a list of strings";
      }
      if (!problem.empty()) {
        r.fatal = "line " + std::to_string(line_no) + " of " + opt.input + " " + problem;
        return r;
      }
    }
    // A text the tokenizer refuses (NullTokenizer's non-integers, ids above
    // its vocab) is a bad line too: undo what earlier keys produced for it.
    std::vector<KeyOutput::Mark> marks;
    for (const KeyOutput& out : r.keys) marks.push_back(out.mark());
    try {
      encode_line(doc, opt, tok, r);
    } catch (const Error& e) {
      for (size_t k = 0; k < r.keys.size(); ++k) r.keys[k].undo(marks[k]);
      if (r.bad_line("line " + std::to_string(line_no) + " of " + opt.input + ": " + e.what(), opt.skip_bad_lines))
        return r;
      continue;
    }
    ++r.documents;
  }
  return r;
}

}  // namespace

namespace {
// A stop signal (SIGTERM, Ctrl-C) ends the run here, between lines: the
// unwinding waits for the workers and the writers remove their temporaries.
void throw_if_stopped(const PreprocessOptions& opt) {
  const int sig = opt.stop_signal ? opt.stop_signal() : 0;
  if (sig != 0)
    throw Error(std::string("kiln preprocess: stopped by ") + stop_signal_name(sig) +
                "; removed its temporary files and wrote nothing to --output-prefix " + opt.output_prefix);
}
}  // namespace

PreprocessResult preprocess(const PreprocessOptions& opt, std::shared_ptr<const Tokenizer> tok) {
  if (opt.input.empty()) throw Error("--input is required (a .jsonl or .jsonl.gz file)");
  if (opt.output_prefix.empty()) throw Error("--output-prefix is required");
  if (opt.json_keys.empty()) throw Error("--json-keys needs at least one key");
  if (opt.workers < 1) throw Error("--workers must be at least 1");
  if (opt.log_interval < 0) throw Error("--log-interval must not be negative");
  const auto t0 = Clock::now();
  PreprocessResult result;

  // A stop signal ends a read that waits on a stalled pipe, too (N109).
  LineReader reader(opt.input, [&opt] { throw_if_stopped(opt); });
  std::vector<std::unique_ptr<IndexedDatasetWriter>> writers;
  for (const std::string& key : opt.json_keys) {
    result.outputs.push_back(opt.output_prefix + "_" + key + "_document");
    const std::vector<std::string> stale = remove_dead_writers_temporaries(result.outputs.back());
    if (!stale.empty() && opt.log)
      std::fprintf(opt.log, "kiln preprocess: removed %zu temporaries left by an interrupted run (e.g. %s)\n",
                   stale.size(), stale.front().c_str());
    writers.push_back(std::make_unique<IndexedDatasetWriter>(result.outputs.back(), optimal_dtype(tok->vocab_size())));
  }

  ThreadPool pool(static_cast<size_t>(opt.workers));
  const size_t max_in_flight = 2 * static_cast<size_t>(opt.workers) + 1;
  std::deque<std::future<ChunkResult>> in_flight;
  int64_t next_report = opt.log_interval;
  int64_t done_bytes = 0;  // input bytes of the documents written so far

  auto report = [&] {
    if (!opt.log || opt.log_interval <= 0) return;
    for (; result.documents >= next_report; next_report += opt.log_interval) {
      const double s = std::max(std::chrono::duration<double>(Clock::now() - t0).count(), 1e-9);
      std::fprintf(opt.log, "Processed %lld documents (%.1f docs/s, %.2f MB/s).\n", static_cast<long long>(next_report),
                   static_cast<double>(next_report) / s, static_cast<double>(done_bytes) / s / 1024 / 1024);
    }
    std::fflush(opt.log);
  };

  auto drain_one = [&] {
    // Off the list before get(): get() releases the future's state even when
    // the chunk's task threw, and the cleanup below must not wait on it.
    auto next = std::move(in_flight.front());
    in_flight.pop_front();
    ChunkResult r = next.get();
    if (!r.fatal.empty()) throw Error(r.fatal);
    for (const std::string& m : r.skipped_messages)
      if (opt.log) std::fprintf(opt.log, "warning: skipping %s\n", m.c_str());
    for (size_t k = 0; k < writers.size(); ++k) {
      const KeyOutput& out = r.keys[k];
      size_t tok_pos = 0, len_pos = 0;
      for (uint32_t seqs : out.doc_seqs) {
        size_t ntok = 0;
        for (uint32_t s = 0; s < seqs; ++s) ntok += static_cast<size_t>(out.lengths[len_pos + s]);
        writers[k]->add_document(out.tokens.data() + tok_pos, out.lengths.data() + len_pos, seqs);
        tok_pos += ntok;
        len_pos += seqs;
      }
      result.tokens += static_cast<int64_t>(out.tokens.size());
    }
    result.documents += r.documents;
    result.skipped_lines += r.skipped;
    result.blank_lines += r.blank;
    done_bytes += r.bytes;
    report();
  };

  Chunk chunk;
  int64_t line_no = 0, chunk_start_bytes = 0, prev_bytes = 0;
  std::string line;
  auto submit = [&] {
    if (chunk.ends.empty()) return;
    auto shared = std::make_shared<Chunk>(std::move(chunk));
    in_flight.push_back(pool.submit([shared, &opt, tok] { return process_chunk(*shared, opt, *tok); }));
    chunk = Chunk{};
    while (in_flight.size() >= max_in_flight) drain_one();
  };
  try {
    while (reader.next(line)) {
      ++line_no;
      if (chunk.ends.empty()) chunk.first_line = line_no, chunk_start_bytes = prev_bytes;
      prev_bytes = reader.bytes();
      chunk.text += line;
      chunk.ends.push_back(chunk.text.size());
      chunk.bytes = reader.bytes() - chunk_start_bytes;
      if (chunk.text.size() >= opt.chunk_bytes) submit();
      throw_if_stopped(opt);
    }
    submit();
    while (!in_flight.empty()) {
      drain_one();
      throw_if_stopped(opt);
    }
  } catch (...) {
    for (auto& f : in_flight)  // workers hold references into this frame
      if (f.valid()) f.wait();
    throw;
  }
  for (auto& w : writers) w->finalize();
  result.bytes = reader.bytes();
  result.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  if (opt.log) {
    const double s = std::max(result.seconds, 1e-9);
    std::fprintf(opt.log,
                 "Done: %lld documents, %lld tokens, %.2f MB in %.2f s (%.1f docs/s, %.2f MB/s); "
                 "%lld bad lines skipped, %lld blank lines.\n",
                 static_cast<long long>(result.documents), static_cast<long long>(result.tokens),
                 static_cast<double>(result.bytes) / 1024 / 1024, result.seconds,
                 static_cast<double>(result.documents) / s, static_cast<double>(result.bytes) / s / 1024 / 1024,
                 static_cast<long long>(result.skipped_lines), static_cast<long long>(result.blank_lines));
    for (const std::string& o : result.outputs)
      std::fprintf(opt.log, "Wrote %s.bin and %s.idx\n", o.c_str(), o.c_str());
    std::fflush(opt.log);
  }
  return result;
}

}  // namespace kiln::data
