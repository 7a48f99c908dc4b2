#include "compiler_cache/store.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <utility>

#include "compiler_cache/atomic_file.h"
#include "core/error.h"
#include "core/hash.h"
#include "core/log.h"

namespace kiln::compiler_cache {

namespace fs = std::filesystem;

std::string default_cache_dir() {
  if (const char* d = std::getenv("KILN_CACHE_DIR"); d && *d) return d;
  // The XDG spec: a relative $XDG_CACHE_HOME is invalid and ignored.
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x == '/') return std::string(x) + "/kiln";
  // Only an existing home: as root with HOME=/nonexistent (the nobody
  // convention) kiln created /nonexistent/.cache/kiln, and with no HOME it
  // silently used ./.kiln-cache in whatever directory it ran in (N66).
  const char* h = std::getenv("HOME");
  std::error_code ec;
  if (h && *h == '/' && fs::is_directory(h, ec)) return std::string(h) + "/.cache/kiln";
  static bool warned = false;
  if (!std::exchange(warned, true))
    logger().warn(
        "no compile cache: $HOME ({}) is not an existing directory and $XDG_CACHE_HOME is not an absolute "
        "path; every graph is compiled. Set KILN_CACHE_DIR (or --cache-dir) to keep compiled graphs",
        h ? h : "unset");
  return "";
}

std::string verify_entry(const Entry& e, const std::string& expected_key) {
  if (e.key != expected_key) return "holds key " + e.key + ", its file name says " + expected_key;
  nlohmann::json meta = nlohmann::json::parse(e.metadata, nullptr, /*allow_exceptions=*/false);
  if (!meta.is_object()) return "metadata is not a JSON object";
  KeyParts parts = key_parts_from_json(meta.value("key_parts", nlohmann::json::object()));
  if (parts.ir_hash != sha256_hex(e.ir.data(), e.ir.size())) return "IR does not match its recorded hash";
  if (compute_key(parts) != e.key) return "key does not match its recorded parts";
  if (e.executable.empty()) return "executable section is empty";
  return {};
}

namespace {
// "<64 lowercase hex digits><kind>", the rest of the name after it in *rest.
bool key_then(const std::string& name, std::initializer_list<const char*> kinds, std::string* rest) {
  constexpr size_t kKeyDigits = 64;  // SHA-256
  if (name.size() <= kKeyDigits) return false;
  for (size_t i = 0; i < kKeyDigits; ++i)
    if (!std::isxdigit(static_cast<unsigned char>(name[i])) || std::isupper(static_cast<unsigned char>(name[i])))
      return false;
  for (const char* kind : kinds) {
    const std::string k = kind;
    if (name.compare(kKeyDigits, k.size(), k) == 0) {
      *rest = name.substr(kKeyDigits + k.size());
      return true;
    }
  }
  return false;
}
bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](unsigned char ch) { return std::isdigit(ch) != 0; });
}
}  // namespace

bool is_cache_file_name(const std::string& name) {
  if (name == ".write-probe" || name.rfind(".write-probe.tmp.", 0) == 0) return true;
  std::string rest;
  if (!key_then(name, {".entry", ".failed", ".lock"}, &rest)) return false;
  return rest.empty() || rest.rfind(".tmp.", 0) == 0 || rest.rfind(".stale.", 0) == 0;
}

bool is_quarantine_file_name(const std::string& name) {
  std::string rest;
  if (!key_then(name, {".entry."}, &rest)) return false;
  if (rest.size() > 4 && rest.compare(rest.size() - 4, 4, ".why") == 0) rest.resize(rest.size() - 4);
  const size_t dot = rest.find('.');
  return dot != std::string::npos && all_digits(rest.substr(0, dot)) && all_digits(rest.substr(dot + 1));
}

std::string key_of_path(const std::string& path) {
  std::string name = fs::path(path).filename().string();
  return name.substr(0, name.find('.'));
}

Store::Store(std::string root) : root_(std::move(root)) {}

std::string Store::entry_dir(const KeyParts& p, const std::string& key) const {
  return root_ + "/v1/" + path_component(p.backend + "-" + p.compiler_version) + "/" +
         path_component(p.device_fingerprint) + "/" + key.substr(0, 2);
}
std::string Store::entry_path(const KeyParts& p, const std::string& key) const {
  return entry_dir(p, key) + "/" + key + ".entry";
}
std::string Store::failed_path(const KeyParts& p, const std::string& key) const {
  return entry_dir(p, key) + "/" + key + ".failed";
}
std::string Store::lock_path(const KeyParts& p, const std::string& key) const {
  return entry_dir(p, key) + "/" + key + ".lock";
}

std::string Store::check_writable() const {
  try {
    make_dirs(root_ + "/v1");
    const std::string probe = root_ + "/v1/.write-probe";
    write_file_atomically(probe, "ok", 2);
    ::unlink(probe.c_str());
    return {};
  } catch (const Error& e) {
    return e.what();
  }
}

std::optional<Entry> Store::read(const std::string& path, const std::string& key) const {
  std::vector<uint8_t> bytes;
  try {
    if (::access(path.c_str(), F_OK) != 0) return std::nullopt;
    bytes = read_file(path);
  } catch (const Error& e) {
    logger().warn("compile cache: {}; treating it as a miss", e.what());
    return std::nullopt;
  }
  std::string why;
  try {
    Entry e = decode_entry(bytes.data(), bytes.size());
    why = verify_entry(e, key);
    if (why.empty()) return e;
  } catch (const Error& err) {
    why = err.what();
  }
  std::string moved = quarantine(path, why);
  logger().warn("compile cache: entry {} is corrupt ({}); moved to {}, recompiling", path, why,
                moved.empty() ? "nowhere (cannot move it)" : moved);
  return std::nullopt;
}

std::string Store::quarantine(const std::string& path, const std::string& why) const {
  try {
    make_dirs(quarantine_dir());
    const auto now = std::chrono::system_clock::now().time_since_epoch();
    std::string dest = quarantine_dir() + "/" + fs::path(path).filename().string() + "." +
                       std::to_string(std::chrono::duration_cast<std::chrono::microseconds>(now).count()) + "." +
                       std::to_string(::getpid());
    if (::rename(path.c_str(), dest.c_str()) != 0) return {};
    const std::string note = why + "\n";
    write_file_atomically(dest + ".why", note.data(), note.size());
    return dest;
  } catch (const Error&) {
    return {};
  }
}

void Store::publish(const KeyParts& parts, const Entry& entry) const {
  make_dirs(entry_dir(parts, entry.key));
  const std::vector<uint8_t> bytes = encode_entry(entry);
  write_file_atomically(entry_path(parts, entry.key), bytes.data(), bytes.size());
}

std::optional<std::string> Store::read_failed(const KeyParts& parts, const std::string& key) const {
  const std::string path = failed_path(parts, key);
  if (::access(path.c_str(), F_OK) != 0) return std::nullopt;
  try {
    std::vector<uint8_t> b = read_file(path);
    return std::string(b.begin(), b.end());
  } catch (const Error& e) {
    return std::string("(unreadable marker: ") + e.what() + ")";
  }
}

void Store::write_failed(const KeyParts& parts, const std::string& key, const std::string& log) const {
  make_dirs(entry_dir(parts, key));
  write_file_atomically(failed_path(parts, key), log.data(), log.size());
}

std::vector<std::string> Store::files(const std::string& suffix) const {
  std::vector<std::string> out;
  std::error_code ec;
  const fs::path base = fs::path(root_) / "v1";
  if (!fs::is_directory(base, ec)) return out;
  for (fs::recursive_directory_iterator it(base, fs::directory_options::skip_permission_denied, ec), end;
       !ec && it != end; it.increment(ec)) {
    if (!it->is_regular_file(ec)) continue;
    const std::string p = it->path().string();
    if (suffix.empty() ||
        (p.size() >= suffix.size() && p.compare(p.size() - suffix.size(), suffix.size(), suffix) == 0))
      out.push_back(p);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace kiln::compiler_cache
