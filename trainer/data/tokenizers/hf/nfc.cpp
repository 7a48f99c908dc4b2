#include "trainer/data/tokenizers/hf/nfc.h"

#include <algorithm>
#include <vector>

#include "trainer/data/byte_level_alphabet.h"
#include "trainer/data/tokenizers/hf/nfc_tables.h"

namespace kiln::data::hf {

namespace {

// Hangul syllables decompose and compose by arithmetic (Unicode 3.12).
constexpr uint32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr uint32_t kLCount = 19, kVCount = 21, kTCount = 28, kNCount = kVCount * kTCount, kSCount = kLCount * kNCount;

bool unsafe(uint32_t cp) {
  const UnsafeRange* end = kNfcUnsafe + kNumNfcUnsafe;
  const UnsafeRange* it =
      std::lower_bound(kNfcUnsafe, end, cp, [](const UnsafeRange& r, uint32_t c) { return r.hi < c; });
  return it != end && it->lo <= cp;
}

uint8_t combining_class(uint32_t cp) {
  if (cp < 0x300) return 0;
  const CombiningClass* end = kCombiningClass + kNumCombiningClass;
  const CombiningClass* it =
      std::lower_bound(kCombiningClass, end, cp, [](const CombiningClass& r, uint32_t c) { return r.cp < c; });
  return it != end && it->cp == cp ? it->ccc : 0;
}

void decompose(uint32_t cp, std::vector<uint32_t>& out) {
  if (cp >= kSBase && cp < kSBase + kSCount) {
    uint32_t s = cp - kSBase;
    out.push_back(kLBase + s / kNCount);
    out.push_back(kVBase + (s % kNCount) / kTCount);
    if (s % kTCount) out.push_back(kTBase + s % kTCount);
    return;
  }
  const Decomposition* end = kDecomposition + kNumDecomposition;
  const Decomposition* it =
      std::lower_bound(kDecomposition, end, cp, [](const Decomposition& r, uint32_t c) { return r.cp < c; });
  if (it != end && it->cp == cp)
    out.insert(out.end(), kDecompositionPool + it->offset, kDecompositionPool + it->offset + it->length);
  else
    out.push_back(cp);
}

// The primary composite of the pair, or 0.
uint32_t compose(uint32_t a, uint32_t b) {
  if (a >= kLBase && a < kLBase + kLCount && b >= kVBase && b < kVBase + kVCount)
    return kSBase + ((a - kLBase) * kVCount + (b - kVBase)) * kTCount;
  if (a >= kSBase && a < kSBase + kSCount && (a - kSBase) % kTCount == 0 && b > kTBase && b < kTBase + kTCount)
    return a + (b - kTBase);
  const Composition* end = kComposition + kNumComposition;
  const Composition* it = std::lower_bound(kComposition, end, std::make_pair(a, b), [](const Composition& r, auto k) {
    return r.first != k.first ? r.first < k.first : r.second < k.second;
  });
  return it != end && it->first == a && it->second == b ? it->composite : 0;
}

}  // namespace

void nfc_in_place(std::string& text) {
  const auto* p = reinterpret_cast<const uint8_t*>(text.data());
  const size_t n = text.size();
  bool quick_yes = true;
  std::vector<uint32_t> cps;
  for (size_t i = 0; i < n;) {
    if (p[i] < 0x80) {
      ++i;
      continue;
    }
    size_t len;
    uint32_t cp = decode_cp(p + i, len);
    if (unsafe(cp)) {
      quick_yes = false;
      break;
    }
    i += len;
  }
  if (quick_yes) return;
  // Canonical decomposition, canonical ordering, then canonical composition.
  std::vector<uint32_t> d;
  d.reserve(n);
  for (size_t i = 0; i < n;) {
    size_t len;
    decompose(decode_cp(p + i, len), d);
    i += len;
  }
  std::vector<uint8_t> cc(d.size());
  for (size_t i = 0; i < d.size(); ++i) cc[i] = combining_class(d[i]);
  for (size_t i = 0; i < d.size();) {  // stable sort of each run of non-starters by class
    if (cc[i] == 0) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < d.size() && cc[j] != 0) ++j;
    std::vector<std::pair<uint8_t, uint32_t>> run;
    for (size_t k = i; k < j; ++k) run.emplace_back(cc[k], d[k]);
    std::stable_sort(run.begin(), run.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (size_t k = i; k < j; ++k) cc[k] = run[k - i].first, d[k] = run[k - i].second;
    i = j;
  }
  std::vector<uint32_t> out;
  out.reserve(d.size());
  size_t starter = SIZE_MAX;
  int last_cc = -1;  // class of the last character kept after the starter
  for (size_t i = 0; i < d.size(); ++i) {
    const uint8_t c = cc[i];
    if (starter != SIZE_MAX) {
      bool adjacent = out.size() == starter + 1;
      if (adjacent || (last_cc != 0 && last_cc < c)) {  // not blocked
        if (uint32_t composite = compose(out[starter], d[i])) {
          out[starter] = composite;
          continue;
        }
      }
    }
    if (c == 0) starter = out.size();
    last_cc = c;
    out.push_back(d[i]);
  }
  std::string s;
  s.reserve(n);
  for (uint32_t cp : out) append_utf8(s, cp);
  text = std::move(s);
}

}  // namespace kiln::data::hf
