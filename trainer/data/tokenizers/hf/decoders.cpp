#include "trainer/data/tokenizers/hf/decoders.h"

#include "trainer/data/byte_level_alphabet.h"
#include "trainer/data/gpt2_tokenizer.h"
#include "trainer/data/tokenizers/hf/normalizers.h"

namespace kiln::data::hf {

namespace {

constexpr const char* kDecoders = "ByteLevel, ByteFallback, Metaspace, Replace, Fuse, Strip, Sequence";

// The code points of a UTF-8 string.
std::vector<uint32_t> code_points(const std::string& s) {
  std::vector<uint32_t> cps;
  const auto* p = reinterpret_cast<const uint8_t*>(s.data());
  for (size_t i = 0; i < s.size();) {
    size_t len;
    cps.push_back(decode_cp(p + i, len));
    i += len;
  }
  return cps;
}
uint32_t single_char(const std::string& s, const Where& where) {
  std::vector<uint32_t> cps = code_points(s);
  if (cps.size() != 1) where.fail("is not one character");
  return cps[0];
}

// ByteLevel: each token's GPT-2-alphabet characters back to bytes (a token
// with a character outside the alphabet stays as it is), then all joined.
class ByteLevel final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    const ByteLevelAlphabet& alpha = byte_level_alphabet();
    std::string bytes;
    for (const std::string& t : tokens) {
      std::string raw;
      bool all = true;
      const auto* p = reinterpret_cast<const uint8_t*>(t.data());
      for (size_t i = 0; i < t.size() && all;) {
        size_t len;
        int b = alpha.byte_of(decode_cp(p + i, len));
        if (b < 0) all = false;
        raw.push_back(static_cast<char>(b));
        i += len;
      }
      bytes += all ? raw : t;
    }
    tokens.assign(1, utf8_lossy(bytes));
  }
};

// ByteFallback: runs of <0xXX> tokens become their bytes when those are
// valid UTF-8, else one U+FFFD per byte.
class ByteFallback final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::vector<std::string> out;
    std::string bytes;
    size_t n_bytes = 0;
    auto flush = [&] {
      if (n_bytes == 0) return;
      if (Gpt2Tokenizer::invalid_utf8_at(bytes) == std::string::npos) {
        out.push_back(bytes);
      } else {
        for (size_t k = 0; k < n_bytes; ++k) out.emplace_back("\xEF\xBF\xBD");
      }
      bytes.clear();
      n_bytes = 0;
    };
    for (std::string& t : tokens) {
      int b = byte_token(t);
      if (b >= 0) {
        bytes.push_back(static_cast<char>(b));
        ++n_bytes;
        continue;
      }
      flush();
      out.push_back(std::move(t));
    }
    flush();
    tokens = std::move(out);
  }

 private:
  static int hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  }
  // The byte of a "<0xXX>" token, or -1.
  static int byte_token(const std::string& t) {
    if (t.size() != 6 || t.compare(0, 3, "<0x") != 0 || t[5] != '>') return -1;
    int hi = hex(t[3]), lo = hex(t[4]);
    return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
  }
};

// Metaspace: the replacement character becomes a space, except in the
// first token where (unless prepend_scheme is never) it is dropped.
class Metaspace final : public Decoder {
 public:
  Metaspace(const json& node, const Where& where) {
    replacement_ = single_char(need_string(node, "replacement", where), where.at("replacement"));
    auto scheme = node.find("prepend_scheme");
    if (scheme != node.end() && scheme->is_string())
      strip_first_ = scheme->get<std::string>() != "never";
    else
      strip_first_ = opt_bool(node, "add_prefix_space", where, true);
  }
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string out;
      for (uint32_t cp : code_points(tokens[i])) {
        if (cp != replacement_)
          append_utf8(out, cp);
        else if (!(i == 0 && strip_first_))
          out.push_back(' ');
      }
      tokens[i] = std::move(out);
    }
  }

 private:
  uint32_t replacement_ = 0;
  bool strip_first_ = true;
};

class Replace final : public Decoder {
 public:
  Replace(const json& node, const Where& where) : pattern_(node, where) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (std::string& t : tokens) pattern_.apply(t);
  }

 private:
  ReplacePattern pattern_;
};

class Fuse final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string all;
    for (const std::string& t : tokens) all += t;
    tokens.clear();
    tokens.push_back(std::move(all));
  }
};

// Strip: up to `start` leading and `stop` trailing `content` characters of
// each token.
class Strip final : public Decoder {
 public:
  Strip(const json& node, const Where& where) {
    content_ = single_char(need_string(node, "content", where), where.at("content"));
    const json& start = need(node, "start", where, &json::is_number_unsigned, "a count");
    const json& stop = need(node, "stop", where, &json::is_number_unsigned, "a count");
    start_ = start.get<size_t>(), stop_ = stop.get<size_t>();
  }
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (std::string& t : tokens) {
      std::vector<uint32_t> cps = code_points(t);
      size_t begin = 0, end = cps.size();
      while (begin < end && begin < start_ && cps[begin] == content_) ++begin;
      for (size_t k = 0; k < stop_ && end > begin && cps[end - 1] == content_; ++k) --end;
      std::string out;
      for (size_t i = begin; i < end; ++i) append_utf8(out, cps[i]);
      t = std::move(out);
    }
  }

 private:
  uint32_t content_ = 0;
  size_t start_ = 0, stop_ = 0;
};

class Sequence final : public Decoder {
 public:
  explicit Sequence(std::vector<std::unique_ptr<Decoder>> steps) : steps_(std::move(steps)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (const auto& s : steps_) s->decode_chain(tokens);
  }

 private:
  std::vector<std::unique_ptr<Decoder>> steps_;
};

}  // namespace

std::unique_ptr<Decoder> make_decoder(const json& node, const Where& where) {
  if (node.is_null()) return nullptr;
  const std::string type = type_of(node, where);
  if (type == "ByteLevel") return std::make_unique<ByteLevel>();
  if (type == "ByteFallback") return std::make_unique<ByteFallback>();
  if (type == "Metaspace") return std::make_unique<Metaspace>(node, where);
  if (type == "Replace") return std::make_unique<Replace>(node, where);
  if (type == "Fuse") return std::make_unique<Fuse>();
  if (type == "Strip") return std::make_unique<Strip>(node, where);
  if (type == "Sequence") {
    const json& list = need_array(node, "decoders", where);
    std::vector<std::unique_ptr<Decoder>> steps;
    for (size_t i = 0; i < list.size(); ++i) steps.push_back(make_decoder(list[i], where.at("decoders").at(i)));
    return std::make_unique<Sequence>(std::move(steps));
  }
  unsupported(where, type, kDecoders);
}

std::string utf8_lossy(const std::string& s) {
  if (Gpt2Tokenizer::invalid_utf8_at(s) == std::string::npos) return s;
  std::string out;
  const auto* p = reinterpret_cast<const uint8_t*>(s.data());
  const size_t n = s.size();
  for (size_t i = 0; i < n;) {
    uint8_t b = p[i];
    if (b < 0x80) {
      out.push_back(static_cast<char>(b));
      ++i;
      continue;
    }
    // The sequence's length and the range its second byte must be in.
    size_t len = 0;
    uint8_t lo = 0x80, hi = 0xBF;
    if (b >= 0xC2 && b <= 0xDF)
      len = 2;
    else if (b >= 0xE0 && b <= 0xEF)
      len = 3, lo = b == 0xE0 ? 0xA0 : 0x80, hi = b == 0xED ? 0x9F : 0xBF;
    else if (b >= 0xF0 && b <= 0xF4)
      len = 4, lo = b == 0xF0 ? 0x90 : 0x80, hi = b == 0xF4 ? 0x8F : 0xBF;
    size_t good = 1;  // bytes of a valid prefix
    while (len > 0 && good < len && i + good < n) {
      uint8_t c = p[i + good];
      bool ok = good == 1 ? (c >= lo && c <= hi) : (c & 0xC0) == 0x80;
      if (!ok) break;
      ++good;
    }
    if (len > 0 && good == len) {
      out.append(s, i, len);
    } else {
      out += "\xEF\xBF\xBD";
    }
    i += len > 0 ? good : 1;
  }
  return out;
}

}  // namespace kiln::data::hf
