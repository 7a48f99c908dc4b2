#include "trainer/data/tokenizers/hf/bpe_model.h"

#include <atomic>
#include <cstdio>
#include <queue>

#include "trainer/data/byte_level_alphabet.h"
#include "trainer/data/piece_cache.h"

namespace kiln::data::hf {

namespace {

thread_local PieceCache t_cache;
std::atomic<uint64_t> g_serial{1};

// The raw bytes a GPT-2-alphabet spelling stands for; false when some
// character is outside the alphabet (such a token cannot come out of the
// byte-level model, only out of added tokens).
bool to_raw_bytes(const std::string& spelled, std::string& bytes) {
  const ByteLevelAlphabet& alpha = byte_level_alphabet();
  bytes.clear();
  const auto* p = reinterpret_cast<const uint8_t*>(spelled.data());
  for (size_t i = 0; i < spelled.size();) {
    size_t len;
    int b = alpha.byte_of(decode_cp(p + i, len));
    if (b < 0) return false;
    bytes.push_back(static_cast<char>(b));
    i += len;
  }
  return true;
}

}  // namespace

// Open-addressing map (a, b) -> (rank, merged id).
struct BpeModel::PairTable {
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
        entries[i] = Entry{k, rank, merged};  // a repeated pair keeps its last rank, as HF's HashMap collect
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

BpeModel::BpeModel(const json& node, const Where& where, bool byte_level)
    : byte_level_(byte_level), serial_(g_serial.fetch_add(1)) {
  auto refuse_if_set = [&](const char* key, const char* why) {
    auto it = node.find(key);
    if (it != node.end() && !it->is_null() && !(it->is_string() && it->get<std::string>().empty()))
      where.at(key).fail(std::string("is set; ") + why);
  };
  auto dropout = node.find("dropout");
  if (dropout != node.end() && !dropout->is_null() && !(dropout->is_number() && dropout->get<double>() == 0.0))
    where.at("dropout").fail("is set; kiln encodes deterministically (dropout must be null)");
  refuse_if_set("continuing_subword_prefix", "kiln's BPE does not implement it");
  refuse_if_set("end_of_word_suffix", "kiln's BPE does not implement it");
  byte_fallback_ = opt_bool(node, "byte_fallback", where, false);
  ignore_merges_ = opt_bool(node, "ignore_merges", where, false);
  fuse_unk_ = opt_bool(node, "fuse_unk", where, false);

  const json& vocab = need(node, "vocab", where, &json::is_object, "an object");
  vocab_.reserve(vocab.size() * 2);
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    if (!it.value().is_number_integer() || it.value().get<int64_t>() < 0 || it.value().get<int64_t>() > INT32_MAX)
      where.at("vocab").fail("token '" + it.key() + "' has no valid id (a non-negative integer)");
    vocab_[it.key()] = static_cast<int32_t>(it.value().get<int64_t>());
  }
  auto unk = node.find("unk_token");
  if (unk != node.end() && !unk->is_null()) {
    if (!unk->is_string()) where.at("unk_token").fail("is not a string");
    auto u = vocab_.find(unk->get<std::string>());
    if (u == vocab_.end()) where.at("unk_token").fail("'" + unk->get<std::string>() + "' is not in the vocab");
    unk_id_ = u->second;
  }
  std::fill(std::begin(byte_token_), std::end(byte_token_), -1);
  std::fill(std::begin(fallback_token_), std::end(fallback_token_), -1);
  if (byte_level_) {
    std::string bytes;
    for (const auto& [token, id] : vocab_) {
      if (!to_raw_bytes(token, bytes)) continue;
      model_keys_.emplace(bytes, id);
      if (bytes.size() == 1) byte_token_[static_cast<uint8_t>(bytes[0])] = id;
    }
  }
  if (byte_fallback_) {
    for (int b = 0; b < 256; ++b) {
      char name[8];
      std::snprintf(name, sizeof name, "<0x%02X>", b);
      auto it = vocab_.find(std::string_view(name));
      if (it != vocab_.end()) fallback_token_[b] = it->second;
    }
  }

  const json& merges = need_array(node, "merges", where);
  pairs_ = std::make_unique<PairTable>(merges.size());
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const json& m = merges[rank];
    std::string a, b;
    if (m.is_string()) {  // the old format, "a b"
      const std::string& s = m.get_ref<const std::string&>();
      size_t sp = s.find(' ');
      if (sp == std::string::npos || sp == 0 || sp + 1 >= s.size() || s.find(' ', sp + 1) != std::string::npos)
        where.at("merges").at(rank).fail("('" + s + "') is not \"left right\"");
      a = s.substr(0, sp), b = s.substr(sp + 1);
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {  // ["a", "b"]
      a = m[0].get<std::string>(), b = m[1].get<std::string>();
    } else {
      where.at("merges").at(rank).fail("is neither \"left right\" nor [\"left\", \"right\"]");
    }
    auto ia = vocab_.find(a), ib = vocab_.find(b), iab = vocab_.find(a + b);
    if (ia == vocab_.end() || ib == vocab_.end() || iab == vocab_.end())
      where.at("merges").at(rank).fail(std::string("('").append(a).append("', '").append(b).append(
          "') uses or makes a token that is not in the vocab"));
    pairs_->put(ia->second, ib->second, static_cast<int32_t>(rank), iab->second);
  }
}

BpeModel::~BpeModel() = default;

// One symbol per byte (byte_level) or per character; a character not in
// the vocab becomes its <0xXX> byte tokens (byte_fallback) or the unknown
// token (consecutive ones fused with fuse_unk), else it is dropped, as in
// Hugging Face's BPE.
void BpeModel::initial_symbols(std::string_view piece, std::vector<int32_t>& symbols) const {
  const auto* p = reinterpret_cast<const uint8_t*>(piece.data());
  if (byte_level_) {
    for (size_t i = 0; i < piece.size(); ++i) {
      int32_t id = byte_token_[p[i]];
      if (id >= 0) {
        symbols.push_back(id);
      } else if (unk_id_ >= 0 && !(fuse_unk_ && !symbols.empty() && symbols.back() == unk_id_)) {
        symbols.push_back(unk_id_);
      }
    }
    return;
  }
  bool last_was_unk = false;
  for (size_t i = 0; i < piece.size();) {
    size_t len = 1;
    decode_cp(p + i, len);
    auto it = vocab_.find(piece.substr(i, len));
    if (it != vocab_.end()) {
      symbols.push_back(it->second);
      last_was_unk = false;
    } else {
      bool all = byte_fallback_;
      for (size_t k = 0; all && k < len; ++k) all = fallback_token_[p[i + k]] >= 0;
      if (all) {
        for (size_t k = 0; k < len; ++k) symbols.push_back(fallback_token_[p[i + k]]);
        last_was_unk = false;
      } else if (unk_id_ >= 0) {
        if (!(fuse_unk_ && last_was_unk)) symbols.push_back(unk_id_);
        last_was_unk = true;
      }
    }
    i += len;
  }
}

// Hugging Face's Word::merge_all without dropout: repeatedly the pair of
// lowest rank, the leftmost among equals, until none is left.
void BpeModel::merge(std::vector<int32_t>& sym) const {
  const size_t n = sym.size();
  if (n < 2) return;
  struct Cand {
    int32_t rank;
    uint32_t pos;
    bool operator>(const Cand& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  std::vector<uint32_t> next(n), prev(n);
  for (size_t i = 0; i < n; ++i) next[i] = static_cast<uint32_t>(i + 1), prev[i] = static_cast<uint32_t>(i - 1);
  std::vector<bool> alive(n, true);
  std::priority_queue<Cand, std::vector<Cand>, std::greater<Cand>> heap;
  auto push = [&](size_t i) {
    if (next[i] >= n) return;
    if (const PairTable::Entry* e = pairs_->get(sym[i], sym[next[i]]))
      heap.push(Cand{e->rank, static_cast<uint32_t>(i)});
  };
  for (size_t i = 0; i + 1 < n; ++i) push(i);
  while (!heap.empty()) {
    Cand c = heap.top();
    heap.pop();
    size_t i = c.pos;
    if (!alive[i] || next[i] >= n) continue;
    const PairTable::Entry* e = pairs_->get(sym[i], sym[next[i]]);
    if (!e || e->rank != c.rank) continue;  // the pair changed since it was queued
    size_t j = next[i];
    sym[i] = e->merged;
    alive[j] = false;
    next[i] = next[j];
    if (next[j] < n) prev[next[j]] = static_cast<uint32_t>(i);
    if (prev[i] < n) push(prev[i]);
    push(i);
  }
  size_t w = 0;
  for (size_t i = 0; i < n; i = next[i]) sym[w++] = sym[i];
  sym.resize(w);
}

void BpeModel::tokenize_uncached(std::string_view piece, std::vector<int32_t>& out) const {
  if (ignore_merges_) {  // a piece that is a token is that token, merges or not
    const TokenIds& keys = byte_level_ ? model_keys_ : vocab_;
    auto it = keys.find(piece);
    if (it != keys.end()) {
      out.push_back(it->second);
      return;
    }
  }
  thread_local std::vector<int32_t> symbols;
  symbols.clear();
  initial_symbols(piece, symbols);
  merge(symbols);
  out.insert(out.end(), symbols.begin(), symbols.end());
}

void BpeModel::tokenize(std::string_view piece, std::vector<int32_t>& out) const {
  if (piece.empty()) return;
  const auto* p = reinterpret_cast<const uint8_t*>(piece.data());
  const size_t n = piece.size();
  if (n == 1 && byte_level_ && byte_token_[p[0]] >= 0) {  // one byte is its byte token, merges or not
    out.push_back(byte_token_[p[0]]);
    return;
  }
  if (n > PieceCache::kMaxKey) {
    tokenize_uncached(piece, out);
    return;
  }
  PieceCache& cache = t_cache;
  if (cache.owner != serial_) cache.reset(serial_);
  uint64_t h = hash_bytes(p, n);
  PieceCache::Slot* s = cache.find(p, n, h);
  if (s->hash != 0) {
    const int32_t* v = cache.vals.data() + s->val_off;
    out.insert(out.end(), v, v + s->val_len);
    return;
  }
  size_t before = out.size();
  tokenize_uncached(piece, out);
  if (2 * (cache.used + 1) > PieceCache::kSlots) {
    cache.reset(serial_);
    s = cache.find(p, n, h);
  }
  *s = PieceCache::Slot{h, static_cast<uint32_t>(cache.keys.size()), static_cast<uint32_t>(cache.vals.size()),
                        static_cast<uint16_t>(n), static_cast<uint16_t>(out.size() - before)};
  cache.keys.append(piece);
  cache.vals.insert(cache.vals.end(), out.begin() + static_cast<std::ptrdiff_t>(before), out.end());
  ++cache.used;
}

}  // namespace kiln::data::hf
