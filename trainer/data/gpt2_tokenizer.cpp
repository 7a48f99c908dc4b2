#include "trainer/data/gpt2_tokenizer.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <nlohmann/json.hpp>
#include <queue>
#include <unordered_map>

#include "core/error.h"
#include "trainer/data/byte_level_alphabet.h"
#include "trainer/data/piece_cache.h"
#include "trainer/data/unicode_tables.h"

namespace kiln::data {

namespace {

constexpr std::string_view kEndOfText = "<|endoftext|>";

inline CharClass class_at(const uint8_t* p, size_t& len) {
  if (p[0] < 0x80) return len = 1, static_cast<CharClass>(kAsciiClass[p[0]]);
  return char_class(decode_cp(p, len));
}

// End of the run of characters of class cls starting at i.
inline size_t run_end(const uint8_t* p, size_t n, size_t i, CharClass cls) {
  while (i < n) {
    uint8_t b = p[i];
    if (b < 0x80) {
      if (kAsciiClass[b] != cls) break;
      ++i;
    } else {
      size_t len;
      if (char_class(decode_cp(p + i, len)) != cls) break;
      i += len;
    }
  }
  return i;
}

// End of the piece that starts at i: the first alternative of GPT-2's
// pattern that matches at i, as a backtracking regex engine would choose.
inline size_t piece_end(const uint8_t* p, size_t n, size_t i) {
  const uint8_t c = p[i];
  if (c == '\'' && i + 1 < n) {  // 's 't 're 've 'm 'll 'd
    const uint8_t d = p[i + 1];
    if (d == 's' || d == 't' || d == 'm' || d == 'd') return i + 2;
    if (i + 2 < n) {
      const uint8_t e = p[i + 2];
      if ((d == 'r' && e == 'e') || (d == 'v' && e == 'e') || (d == 'l' && e == 'l')) return i + 3;
    }
  }
  size_t len;
  if (c == ' ' && i + 1 < n) {  // " ?\p{L}+", " ?\p{N}+", " ?[^\s\p{L}\p{N}]+"
    CharClass next = class_at(p + i + 1, len);
    if (next != kSpace) return run_end(p, n, i + 1 + len, next);
  }
  CharClass cls = class_at(p + i, len);
  if (cls != kSpace) return run_end(p, n, i + len, cls);
  // "\s+(?!\S)" then "\s+": a whitespace run keeps its last character for
  // the next piece when a non-space follows and the run is longer than one.
  size_t j = run_end(p, n, i + len, kSpace);
  if (j == n) return n;
  size_t last = j - 1;
  while ((p[last] & 0xC0) == 0x80) --last;  // start of the run's last character
  return last > i ? last : j;
}

template <class F>
inline void for_each_piece(std::string_view text, F&& f) {
  const auto* p = reinterpret_cast<const uint8_t*>(text.data());
  const size_t n = text.size();
  for (size_t i = 0; i < n;) {
    size_t j = piece_end(p, n, i);
    f(p + i, j - i);
    i = j;
  }
}

thread_local PieceCache t_cache;
std::atomic<uint64_t> g_serial{1};

}  // namespace

// Open-addressing map (a, b) -> (rank, merged id).
struct Gpt2Tokenizer::PairTable {
  struct Entry {
    uint64_t key;  // ~0: empty
    int32_t rank, merged;
  };
  std::vector<Entry> entries;
  uint64_t mask = 0;
  int shift = 0;
  explicit PairTable(size_t n) {
    size_t cap = 16;
    int bits = 4;
    while (cap < 2 * n + 16) cap <<= 1, ++bits;
    entries.assign(cap, Entry{~0ull, 0, 0});
    mask = cap - 1;
    shift = 64 - bits;
  }
  static uint64_t key(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }
  size_t slot(uint64_t k) const { return static_cast<size_t>((k * 0x9E3779B97F4A7C15ull) >> shift); }
  void put(int32_t a, int32_t b, int32_t rank, int32_t merged) {
    uint64_t k = key(a, b);
    for (size_t i = slot(k);; i = (i + 1) & mask) {
      if (entries[i].key == ~0ull || entries[i].key == k) {
        entries[i] = Entry{k, rank, merged};  // a repeated pair keeps its last rank, as GPT-2's dict
        return;
      }
    }
  }
  const Entry* get(int32_t a, int32_t b) const {
    uint64_t k = key(a, b);
    for (size_t i = slot(k);; i = (i + 1) & mask) {
      const Entry& e = entries[i];
      if (e.key == k) return &e;
      if (e.key == ~0ull) return nullptr;
    }
  }
};

std::shared_ptr<const Gpt2Tokenizer> Gpt2Tokenizer::load(const std::string& vocab_file, const std::string& merge_file) {
  std::string vocab = read_tokenizer_file(vocab_file, "--vocab-file");
  std::string merges = read_tokenizer_file(merge_file, "--merge-file");
  return std::make_shared<const Gpt2Tokenizer>(vocab, merges, "--vocab-file " + vocab_file,
                                               "--merge-file " + merge_file);
}

Gpt2Tokenizer::Gpt2Tokenizer(std::string_view vocab_json, std::string_view merges_txt, const std::string& vocab_name,
                             const std::string& merges_name)
    : sha256_(content_sha256({vocab_json, merges_txt})), serial_(g_serial.fetch_add(1)) {
  const ByteLevelAlphabet& bm = byte_level_alphabet();
  nlohmann::json vocab;
  try {
    vocab = nlohmann::json::parse(vocab_json);
  } catch (const nlohmann::json::exception& e) {
    throw Error(vocab_name + " is not valid JSON (" + e.what() + "); pass GPT-2's vocab.json");
  }
  if (!vocab.is_object() || vocab.empty())
    throw Error(vocab_name + " is not a JSON object of token -> id; pass GPT-2's vocab.json");
  const size_t n = vocab.size();
  token_bytes_.assign(n, std::string());
  std::vector<bool> seen(n, false);
  std::unordered_map<std::string, int32_t> by_bytes;
  by_bytes.reserve(n * 2);
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    const std::string& key = it.key();
    if (!it.value().is_number_integer()) {
      std::string msg = vocab_name;
      msg += ": the id of token '" + key + "' is not an integer";
      throw Error(msg);
    }
    int64_t id = it.value().get<int64_t>();
    if (id < 0 || id >= static_cast<int64_t>(n) || seen[static_cast<size_t>(id)]) {
      std::string msg = vocab_name;
      msg += ": token '" + key + "' has id " + std::to_string(id);
      msg += ", but the " + std::to_string(n) + " ids must be 0.." + std::to_string(n - 1) + ", each once";
      throw Error(msg);
    }
    seen[static_cast<size_t>(id)] = true;
    std::string bytes;
    if (key == kEndOfText) {
      bytes = key;
      eod_ = static_cast<int32_t>(id);
    } else {
      const auto* p = reinterpret_cast<const uint8_t*>(key.data());
      for (size_t i = 0; i < key.size();) {
        size_t len;
        uint32_t cp = decode_cp(p + i, len);
        if (cp >= 512 || bm.cp_to_byte[cp] < 0) {
          std::string msg = vocab_name;
          msg += ": token '" + key + "' is not a byte-level BPE token (character U+";
          msg += std::to_string(cp) + " is outside GPT-2's byte alphabet)";
          throw Error(msg);
        }
        bytes.push_back(static_cast<char>(bm.cp_to_byte[cp]));
        i += len;
      }
    }
    by_bytes.emplace(bytes, static_cast<int32_t>(id));
    token_bytes_[static_cast<size_t>(id)] = std::move(bytes);
  }
  if (eod_ < 0) throw Error(vocab_name + " has no <|endoftext|> token; pass GPT-2's vocab.json");
  for (int b = 0; b < 256; ++b) {
    auto it = by_bytes.find(std::string(1, static_cast<char>(b)));
    if (it == by_bytes.end())
      throw Error(vocab_name + " has no token for byte " + std::to_string(b) + "; pass GPT-2's vocab.json");
    byte_token_[b] = it->second;
  }

  // merges.txt: "#version: ..." then one "left right" pair per line, best first.
  pairs_ = std::make_unique<PairTable>(std::count(merges_txt.begin(), merges_txt.end(), '\n') + 1);
  auto to_bytes = [&](std::string_view s, size_t line_no, std::string_view line) {
    std::string bytes;
    const auto* p = reinterpret_cast<const uint8_t*>(s.data());
    for (size_t i = 0; i < s.size();) {
      size_t len;
      uint32_t cp = decode_cp(p + i, len);
      if (cp >= 512 || bm.cp_to_byte[cp] < 0)
        throw Error(merges_name + " line " + std::to_string(line_no) + " ('" + std::string(line) +
                    "') is not a byte-level BPE merge; pass GPT-2's merges.txt");
      bytes.push_back(static_cast<char>(bm.cp_to_byte[cp]));
      i += len;
    }
    return bytes;
  };
  int32_t rank = 0;
  size_t line_no = 0;
  for (size_t pos = 0; pos < merges_txt.size();) {
    size_t eol = merges_txt.find('\n', pos);
    if (eol == std::string_view::npos) eol = merges_txt.size();
    std::string_view line = merges_txt.substr(pos, eol - pos);
    pos = eol + 1;
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || (line_no == 1 && line.rfind("#version", 0) == 0)) continue;
    size_t sp = line.find(' ');
    if (sp == std::string_view::npos || sp == 0 || sp + 1 >= line.size() ||
        line.find(' ', sp + 1) != std::string_view::npos)
      throw Error(merges_name + " line " + std::to_string(line_no) + " ('" + std::string(line) +
                  "') is not 'left right'; pass GPT-2's merges.txt");
    std::string a = to_bytes(line.substr(0, sp), line_no, line), b = to_bytes(line.substr(sp + 1), line_no, line);
    auto ia = by_bytes.find(a), ib = by_bytes.find(b), iab = by_bytes.find(a + b);
    if (ia == by_bytes.end() || ib == by_bytes.end() || iab == by_bytes.end()) {
      std::string msg = merges_name;
      msg += " line " + std::to_string(line_no) + " ('" + std::string(line) + "') uses or makes a token that ";
      msg += vocab_name + " does not have: the vocab and merges files do not belong together";
      throw Error(msg);
    }
    pairs_->put(ia->second, ib->second, rank++, iab->second);
  }
  if (rank == 0) throw Error(merges_name + " has no merges; pass GPT-2's merges.txt");
}

Gpt2Tokenizer::~Gpt2Tokenizer() = default;

inline int64_t Gpt2Tokenizer::lookup(int32_t a, int32_t b, int32_t* merged) const {
  const PairTable::Entry* e = pairs_->get(a, b);
  if (!e) return -1;
  *merged = e->merged;
  return e->rank;
}

size_t Gpt2Tokenizer::invalid_utf8_at(std::string_view text) {
  const auto* p = reinterpret_cast<const uint8_t*>(text.data());
  const size_t n = text.size();
  size_t i = 0;
  while (i < n) {
    // Eight ASCII bytes at a time.
    if (i + 8 <= n) {
      uint64_t w;
      std::memcpy(&w, p + i, 8);
      if ((w & 0x8080808080808080ull) == 0) {
        i += 8;
        continue;
      }
    }
    uint8_t b = p[i];
    if (b < 0x80) {
      ++i;
      continue;
    }
    size_t len;
    uint32_t min;
    if (b >= 0xC2 && b <= 0xDF)
      len = 2, min = 0x80;
    else if (b >= 0xE0 && b <= 0xEF)
      len = 3, min = 0x800;
    else if (b >= 0xF0 && b <= 0xF4)
      len = 4, min = 0x10000;
    else
      return i;
    if (i + len > n) return i;
    for (size_t k = 1; k < len; ++k)
      if ((p[i + k] & 0xC0) != 0x80) return i;
    size_t dummy;
    uint32_t cp = decode_cp(p + i, dummy);
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i;
    i += len;
  }
  return std::string_view::npos;
}

void Gpt2Tokenizer::pretokenize(std::string_view text, std::vector<std::string_view>& pieces) {
  if (size_t bad = invalid_utf8_at(text); bad != std::string_view::npos)
    throw Error("text is not valid UTF-8 (byte " + std::to_string(bad) + ")");
  for_each_piece(text, [&](const uint8_t* p, size_t n) { pieces.emplace_back(reinterpret_cast<const char*>(p), n); });
}

// GPT-2's merge loop on a short piece: each round finds the lowest-ranked
// adjacent pair and merges every occurrence left to right.
void Gpt2Tokenizer::bpe_small(const uint8_t* p, size_t n, std::vector<int32_t>& out) const {
  int32_t sym[64], merged[64];
  int64_t rank[64];
  for (size_t i = 0; i < n; ++i) sym[i] = byte_token_[p[i]];
  for (size_t i = 0; i + 1 < n; ++i) rank[i] = lookup(sym[i], sym[i + 1], &merged[i]);
  while (n > 1) {
    int64_t best = -1;
    for (size_t i = 0; i + 1 < n; ++i)
      if (rank[i] >= 0 && (best < 0 || rank[i] < best)) best = rank[i];
    if (best < 0) break;
    size_t w = 0;
    for (size_t i = 0; i < n;) {
      if (i + 1 < n && rank[i] == best) {
        sym[w++] = merged[i];
        i += 2;
      } else {
        sym[w++] = sym[i++];
      }
    }
    n = w;
    for (size_t i = 0; i + 1 < n; ++i) rank[i] = lookup(sym[i], sym[i + 1], &merged[i]);
  }
  out.insert(out.end(), sym, sym + n);
}

// The same rounds with a heap and a linked list, for long pieces.
void Gpt2Tokenizer::bpe_heap(const uint8_t* p, size_t n, std::vector<int32_t>& out) const {
  struct Cand {
    int64_t rank;
    size_t pos;
    int32_t left, right, merged;
    bool operator>(const Cand& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  std::vector<int32_t> sym(n);
  std::vector<size_t> next(n), prev(n);
  std::vector<bool> alive(n, true);
  for (size_t i = 0; i < n; ++i) sym[i] = byte_token_[p[i]], next[i] = i + 1, prev[i] = i - 1;
  std::priority_queue<Cand, std::vector<Cand>, std::greater<Cand>> heap;
  auto push = [&](size_t i) {
    if (i >= n || next[i] >= n) return;
    int32_t m;
    int64_t r = lookup(sym[i], sym[next[i]], &m);
    if (r >= 0) heap.push(Cand{r, i, sym[i], sym[next[i]], m});
  };
  for (size_t i = 0; i + 1 < n; ++i) push(i);
  std::vector<Cand> round;
  while (!heap.empty()) {
    const int64_t r = heap.top().rank;
    round.clear();
    while (!heap.empty() && heap.top().rank == r) round.push_back(heap.top()), heap.pop();
    std::vector<size_t> touched;
    for (const Cand& c : round) {  // ascending positions
      size_t i = c.pos;
      if (!alive[i] || next[i] >= n || sym[i] != c.left || sym[next[i]] != c.right) continue;
      size_t j = next[i];
      sym[i] = c.merged;
      alive[j] = false;
      next[i] = next[j];
      if (next[j] < n) prev[next[j]] = i;
      touched.push_back(i);
    }
    // New pairs around merged symbols join the heap for later rounds.
    for (size_t i : touched) {
      if (!alive[i]) continue;
      if (prev[i] < n && alive[prev[i]]) push(prev[i]);
      push(i);
    }
  }
  for (size_t i = 0; i < n; i = next[i]) out.push_back(sym[i]);
}

void Gpt2Tokenizer::bpe(std::string_view piece, std::vector<int32_t>& out, bool heap) const {
  const auto* p = reinterpret_cast<const uint8_t*>(piece.data());
  if (piece.empty()) return;
  if (heap || piece.size() > 64)
    bpe_heap(p, piece.size(), out);
  else
    bpe_small(p, piece.size(), out);
}

void Gpt2Tokenizer::encode_segment(std::string_view text, std::vector<int32_t>& out) const {
  PieceCache& cache = t_cache;
  if (cache.owner != serial_) cache.reset(serial_);
  for_each_piece(text, [&](const uint8_t* p, size_t n) {
    if (n == 1) {
      out.push_back(byte_token_[p[0]]);
      return;
    }
    if (n > PieceCache::kMaxKey) {
      bpe_heap(p, n, out);
      return;
    }
    uint64_t h = hash_bytes(p, n);
    PieceCache::Slot* s = cache.find(p, n, h);
    if (s->hash != 0) {
      const int32_t* v = cache.vals.data() + s->val_off;
      out.insert(out.end(), v, v + s->val_len);
      return;
    }
    size_t before = out.size();
    if (n <= 48)
      bpe_small(p, n, out);
    else
      bpe_heap(p, n, out);
    if (2 * (cache.used + 1) > PieceCache::kSlots) {
      cache.reset(serial_);
      s = cache.find(p, n, h);
    }
    *s = PieceCache::Slot{h, static_cast<uint32_t>(cache.keys.size()), static_cast<uint32_t>(cache.vals.size()),
                          static_cast<uint16_t>(n), static_cast<uint16_t>(out.size() - before)};
    cache.keys.append(reinterpret_cast<const char*>(p), n);
    cache.vals.insert(cache.vals.end(), out.begin() + static_cast<std::ptrdiff_t>(before), out.end());
    ++cache.used;
  });
}

void Gpt2Tokenizer::encode(std::string_view text, std::vector<int32_t>& out) const {
  if (size_t bad = invalid_utf8_at(text); bad != std::string_view::npos)
    throw Error("text is not valid UTF-8 (byte " + std::to_string(bad) + ")");
  // Literal <|endoftext|> is the special token; the text between is
  // pre-tokenized on its own, as in Hugging Face's GPT-2 tokenizer.
  size_t pos = 0;
  while (true) {
    size_t hit = text.find(kEndOfText, pos);
    if (hit == std::string_view::npos) break;
    encode_segment(text.substr(pos, hit - pos), out);
    out.push_back(eod_);
    pos = hit + kEndOfText.size();
  }
  encode_segment(text.substr(pos), out);
}

std::string Gpt2Tokenizer::decode(const int32_t* ids, size_t n) const {
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    if (ids[i] < 0 || ids[i] >= static_cast<int32_t>(token_bytes_.size()))
      throw Error("token id " + std::to_string(ids[i]) + " is outside the vocabulary (0.." +
                  std::to_string(token_bytes_.size() - 1) + ")");
    s += token_bytes_[static_cast<size_t>(ids[i])];
  }
  return s;
}

}  // namespace kiln::data
