#include "trainer/checkpoint/safetensors.h"

#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>

#include "core/regular_file.h"

namespace kiln::trainer {

// Tensor bytes are copied verbatim to and from the file, which is only
// correct on a little-endian host.
static_assert(std::endian::native == std::endian::little, "safetensors I/O assumes a little-endian host");

namespace {

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

// Names come from untrusted files; keep error messages one printable line.
std::string quote(const std::string& name) {
  std::string out = "'";
  for (size_t i = 0; i < name.size() && i < 80; ++i) {
    const unsigned char c = static_cast<unsigned char>(name[i]);
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  if (name.size() > 80) out += "...";
  return out + "'";
}

std::string one_line(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  std::replace(s.begin(), s.end(), '\r', ' ');
  return s;
}

std::string shape_str(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

// Element count, or -1 if a dim is negative or the product overflows.
int64_t checked_numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) return -1;
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d) return -1;
    n *= d;
  }
  return n;
}

template <typename T>
SafeTensor make(const char* dtype, std::vector<int64_t> shape, const std::vector<T>& values) {
  const int64_t n = checked_numel(shape);
  if (n < 0 || static_cast<uint64_t>(n) != values.size())
    throw Error(std::string("SafeTensor::from_") + dtype + ": " + std::to_string(values.size()) +
                " values do not fill shape " + shape_str(shape));
  SafeTensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  t.data.resize(values.size() * sizeof(T));
  if (!values.empty()) std::memcpy(t.data.data(), values.data(), t.data.size());
  return t;
}

template <typename T>
std::vector<T> view(const SafeTensor& t, const char* dtype) {
  if (t.dtype != dtype) throw Error("tensor has dtype " + t.dtype + " but " + dtype + " was expected");
  if (t.data.size() % sizeof(T) != 0 || static_cast<int64_t>(t.data.size() / sizeof(T)) != t.numel())
    throw Error("tensor of shape " + shape_str(t.shape) + " holds " + std::to_string(t.data.size()) +
                " bytes, which does not match its shape");
  std::vector<T> out(t.data.size() / sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), t.data.data(), t.data.size());
  return out;
}

[[noreturn]] void io_error(const std::string& what, const std::string& path) {
  throw Error("cannot " + what + " " + path + ": " + std::strerror(errno));
}

}  // namespace

int64_t SafeTensor::numel() const { return checked_numel(shape); }

SafeTensor SafeTensor::from_f32(std::vector<int64_t> shape, const std::vector<float>& v) {
  return make("F32", std::move(shape), v);
}
SafeTensor SafeTensor::from_i32(std::vector<int64_t> shape, const std::vector<int32_t>& v) {
  return make("I32", std::move(shape), v);
}
SafeTensor SafeTensor::from_i64(std::vector<int64_t> shape, const std::vector<int64_t>& v) {
  return make("I64", std::move(shape), v);
}
std::vector<float> SafeTensor::to_f32() const { return view<float>(*this, "F32"); }
std::vector<int32_t> SafeTensor::to_i32() const { return view<int32_t>(*this, "I32"); }
std::vector<int64_t> SafeTensor::to_i64() const { return view<int64_t>(*this, "I64"); }

std::string first_non_finite(const std::map<std::string, SafeTensor>& tensors) {
  for (const auto& [name, t] : tensors) {
    if (t.dtype != "F32") continue;
    for (size_t i = 0; i + sizeof(float) <= t.data.size(); i += sizeof(float)) {
      float v = 0;
      std::memcpy(&v, t.data.data() + i, sizeof v);
      if (!std::isfinite(v)) return name;
    }
  }
  return "";
}

size_t safetensors_dtype_size(const std::string& dtype) {
  static const std::map<std::string, size_t> sizes = {
      {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E5M2", 1}, {"F8_E4M3", 1}, {"I16", 2}, {"U16", 2}, {"F16", 2},
      {"BF16", 2}, {"I32", 4}, {"U32", 4}, {"F32", 4},     {"F64", 8},     {"I64", 8}, {"U64", 8}};
  auto it = sizes.find(dtype);
  return it == sizes.end() ? 0 : it->second;
}

SafetensorsError::SafetensorsError(std::string path, std::string problem)
    : Error("safetensors file " + path + " is corrupt: " + problem),
      path_(std::move(path)),
      problem_(std::move(problem)) {}

void write_safetensors(const std::string& path, const std::map<std::string, SafeTensor>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  std::vector<std::pair<const std::string*, const SafeTensor*>> order;
  for (const auto& [name, t] : tensors) {
    if (name == "__metadata__")
      throw Error("cannot write " + path + ": '__metadata__' is reserved and cannot name a tensor");
    const size_t esize = safetensors_dtype_size(t.dtype);
    if (esize == 0)
      throw Error("cannot write " + path + ": tensor " + quote(name) + " has unknown dtype " + quote(t.dtype));
    const int64_t n = t.numel();
    if (n < 0 || static_cast<uint64_t>(n) > std::numeric_limits<uint64_t>::max() / esize ||
        static_cast<uint64_t>(n) * esize != t.data.size())
      throw Error("cannot write " + path + ": tensor " + quote(name) + " has " + std::to_string(t.data.size()) +
                  " bytes, which does not match dtype " + t.dtype + " and shape " + shape_str(t.shape));
    order.emplace_back(&name, &t);
  }
  // Largest elements first keeps every tensor aligned to its element size
  // (the data section starts 8-aligned); the name breaks ties so the layout
  // is reproducible.
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return safetensors_dtype_size(a.second->dtype) > safetensors_dtype_size(b.second->dtype);
  });

  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const auto& [name, t] : order) {
    const uint64_t end = offset + t->data.size();
    header[*name] = {{"dtype", t->dtype}, {"shape", t->shape}, {"data_offsets", {offset, end}}};
    offset = end;
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const nlohmann::json::exception&) {
    throw Error("cannot write " + path + ": a tensor name or metadata string is not valid UTF-8");
  }
  text.append((8 - text.size() % 8) % 8, ' ');

  File f(std::fopen(path.c_str(), "wb"));
  if (!f) io_error("create", path);
  uint8_t len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<uint8_t>(static_cast<uint64_t>(text.size()) >> (8 * i));
  bool ok = std::fwrite(len, 1, 8, f.get()) == 8 && std::fwrite(text.data(), 1, text.size(), f.get()) == text.size();
  for (const auto& [name, t] : order) {
    if (!ok) break;
    ok = t->data.empty() || std::fwrite(t->data.data(), 1, t->data.size(), f.get()) == t->data.size();
  }
  if (!ok || std::fflush(f.get()) != 0) io_error("write", path);
  if (std::fclose(f.release()) != 0) io_error("write", path);
}

namespace {

struct Entry {
  std::string name;
  SafeTensor tensor;
  uint64_t begin = 0, end = 0;
};

Entry parse_entry(const std::string& path, const std::string& name, const nlohmann::json& v, uint64_t buffer_len) {
  auto bad = [&](const std::string& problem) -> SafetensorsError {
    return SafetensorsError(path, "tensor " + quote(name) + " " + problem);
  };
  if (!v.is_object()) throw bad("entry is not a JSON object");
  auto dt = v.find("dtype");
  auto sh = v.find("shape");
  auto off = v.find("data_offsets");
  if (dt == v.end() || !dt->is_string()) throw bad("has no string 'dtype'");
  if (sh == v.end() || !sh->is_array()) throw bad("has no 'shape' array");
  if (off == v.end() || !off->is_array() || off->size() != 2 || !(*off)[0].is_number_unsigned() ||
      !(*off)[1].is_number_unsigned())
    throw bad("'data_offsets' is not a pair of non-negative integers");

  Entry e;
  e.name = name;
  e.tensor.dtype = dt->get<std::string>();
  const size_t esize = safetensors_dtype_size(e.tensor.dtype);
  if (esize == 0) throw bad("has unknown dtype " + quote(e.tensor.dtype));
  for (const auto& d : *sh) {
    if (!d.is_number_unsigned() || d.get<uint64_t>() > uint64_t{1} << 62)
      throw bad("'shape' holds something other than a non-negative integer");
    e.tensor.shape.push_back(static_cast<int64_t>(d.get<uint64_t>()));
  }
  const int64_t n = checked_numel(e.tensor.shape);
  if (n < 0 || static_cast<uint64_t>(n) > std::numeric_limits<uint64_t>::max() / esize)
    throw bad("shape " + shape_str(e.tensor.shape) + " is too large");
  e.begin = (*off)[0].get<uint64_t>();
  e.end = (*off)[1].get<uint64_t>();
  if (e.begin > e.end) throw bad("data_offsets begin after they end");
  if (e.end > buffer_len) throw bad("data_offsets beyond end of file");
  const uint64_t need = static_cast<uint64_t>(n) * esize;
  if (e.end - e.begin != need)
    throw bad("data_offsets span " + std::to_string(e.end - e.begin) + " bytes but dtype " + e.tensor.dtype +
              " and shape " + shape_str(e.tensor.shape) + " need " + std::to_string(need));
  return e;
}

void check_shape(const std::string& path, const Entry& e, const std::vector<int64_t>& needed) {
  if (needed != e.tensor.shape)
    throw TensorShapeError(path + " tensor " + quote(e.name) + " has shape " + shape_str(e.tensor.shape) +
                           ", the model needs " + shape_str(needed));
}

// Names and shapes from the header against what the reader needs.
void check_expected(const std::string& path, const std::vector<Entry>& entries, const ExpectedTensors& expected) {
  for (const Entry& e : entries) {
    auto it = expected.find(e.name);
    if (it == expected.end())
      throw Error(path + " holds tensor " + quote(e.name) + " " + shape_str(e.tensor.shape) +
                  ", which the model does not have");
    check_shape(path, e, it->second);
  }
  if (entries.size() == expected.size()) return;
  for (const auto& wanted : expected) {
    const std::string& name = wanted.first;
    if (std::none_of(entries.begin(), entries.end(), [&name](const Entry& e) { return e.name == name; }))
      throw Error(path + " has no tensor " + quote(name) + "; it was saved from a different model configuration");
  }
}

// The header's tensors a subset reader takes: those `wanted` names, each
// with the shape it needs.
std::vector<Entry*> check_subset(const std::string& path, const std::vector<Entry*>& entries,
                                 const ExpectedTensors& wanted) {
  std::vector<Entry*> taken;
  for (Entry* e : entries) {
    auto it = wanted.find(e->name);
    if (it == wanted.end()) continue;
    check_shape(path, *e, it->second);
    taken.push_back(e);
  }
  return taken;
}

// How the header's tensors are matched against what the caller needs.
enum class Match { All, Exactly, Subset };

SafetensorsFile read_file(const std::string& path, const ExpectedTensors* expected, Match match) {
  // Bounded by its header: every offset is checked against st_size below
  // before any payload is read.
  const InputFd f = open_input({path, "safetensors file", "", kBoundedByHeader});
  auto corrupt = [&](const std::string& problem) { return SafetensorsError(path, problem); };
  // Whole reads at `offset`; false when the file ends first.
  auto read_at = [&](void* dst, uint64_t size, uint64_t offset) {
    auto* out = static_cast<uint8_t*>(dst);
    while (size > 0) {
      const ssize_t n = ::pread(f.fd(), out, size, static_cast<off_t>(offset));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) io_error("read", path);
      if (n == 0) return false;
      out += n;
      size -= static_cast<uint64_t>(n);
      offset += static_cast<uint64_t>(n);
    }
    return true;
  };
  const uint64_t file_size = f.size();

  if (file_size < 8)
    throw corrupt("file is " + std::to_string(file_size) + " bytes, too short for the 8-byte header length");
  uint8_t len_bytes[8];
  if (!read_at(len_bytes, 8, 0)) throw corrupt("file is truncated");
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<uint64_t>(len_bytes[i]) << (8 * i);
  if (n > kSafetensorsMaxHeader)
    throw corrupt("header length " + std::to_string(n) + " exceeds the " + std::to_string(kSafetensorsMaxHeader) +
                  "-byte limit");
  if (n > file_size - 8)
    throw corrupt("header length " + std::to_string(n) + " runs past the end of the file (" +
                  std::to_string(file_size) + " bytes)");
  if (n < 2) throw corrupt("header length " + std::to_string(n) + " cannot hold a JSON object");

  std::string text(n, '\0');
  if (!read_at(text.data(), n, 8)) throw corrupt("file is truncated");
  if (text[0] != '{') throw corrupt("header does not start with '{'");
  nlohmann::json header;
  // The parser keeps the last of two equal keys: a tensor named twice would
  // lose its first entry silently, and its bytes would show up as a hole.
  std::set<std::string> names;
  std::string twice;
  const auto note_duplicates = [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    if (depth == 1 && event == nlohmann::json::parse_event_t::key && twice.empty() &&
        !names.insert(parsed.get<std::string>()).second)
      twice = parsed.get<std::string>();
    return true;
  };
  try {
    header = nlohmann::json::parse(text, note_duplicates);
  } catch (const nlohmann::json::exception& e) {
    throw corrupt("header is not valid JSON (" + one_line(e.what()) + ")");
  }
  if (!twice.empty())
    throw corrupt((twice == "__metadata__" ? quote(twice) : "tensor " + quote(twice)) + " appears twice in the header");
  if (!header.is_object()) throw corrupt("header is not a JSON object");

  const uint64_t buffer_len = file_size - 8 - n;
  SafetensorsFile out;
  std::vector<Entry> entries;
  for (const auto& [key, value] : header.items()) {
    if (key == "__metadata__") {
      if (!value.is_object()) throw corrupt("'__metadata__' is not a JSON object");
      for (const auto& [mk, mv] : value.items()) {
        if (!mv.is_string()) throw corrupt("metadata value for " + quote(mk) + " is not a string");
        out.metadata[mk] = mv.get<std::string>();
      }
      continue;
    }
    entries.push_back(parse_entry(path, key, value, buffer_len));
  }

  // The reference format requires the tensors to tile the data section
  // exactly: no overlap (aliasing), no holes, no trailing bytes.
  std::vector<Entry*> sorted;
  for (auto& e : entries) sorted.push_back(&e);
  std::sort(sorted.begin(), sorted.end(), [](const Entry* a, const Entry* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  uint64_t expect = 0;
  const Entry* prev = nullptr;
  for (const Entry* e : sorted) {
    if (e->begin < expect)
      throw corrupt("tensor " + quote(e->name) + " data_offsets overlap tensor " + quote(prev->name));
    if (e->begin > expect)
      throw corrupt(std::to_string(e->begin - expect) + " unused bytes before tensor " + quote(e->name) +
                    " (data_offsets are not contiguous)");
    expect = e->end;
    prev = e;
  }
  if (expect != buffer_len)
    throw corrupt(std::to_string(buffer_len - expect) +
                  " unused bytes after the last tensor (file size does not match the header)");

  if (match == Match::Exactly) check_expected(path, entries, *expected);
  if (match == Match::Subset) sorted = check_subset(path, sorted, *expected);
  // In file order, so the reads go forward through the file.
  for (Entry* e : sorted) {
    e->tensor.data.resize(e->end - e->begin);
    if (!e->tensor.data.empty() && !read_at(e->tensor.data.data(), e->tensor.data.size(), 8 + n + e->begin))
      throw corrupt("file is truncated inside tensor " + quote(e->name));
    out.tensors.emplace(std::move(e->name), std::move(e->tensor));
  }
  return out;
}

}  // namespace

SafetensorsFile read_safetensors(const std::string& path, const ExpectedTensors* expected) {
  return read_file(path, expected, expected != nullptr ? Match::Exactly : Match::All);
}

SafetensorsFile read_safetensors_subset(const std::string& path, const ExpectedTensors& wanted) {
  return read_file(path, &wanted, Match::Subset);
}

}  // namespace kiln::trainer
