// Why a key is not cached: compare its parts with the nearest entry, so a
// --require-precompiled failure says "shape (port 'tokens' is [8, 32] here,
// [4, 32] cached)" rather than just "miss".
#include <string>
#include <vector>

#include "compiler_cache/atomic_file.h"
#include "compiler_cache/compile_cache.h"
#include "compiler_cache/store.h"

namespace kiln::compiler_cache {
namespace {

std::string shape_text(const nlohmann::json& shape) {
  if (!shape.is_array()) return "(none)";
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + shape[i].dump();
  return s + "]";
}

std::string short_fp(const std::string& fp) { return fp.substr(0, 12); }

// "build-id:0123456789ab" of "build-id:<40 hex digits>"; "(none)" for an
// entry written before plugin binaries were part of the key.
std::string short_id(const std::string& id) {
  if (id.empty()) return "(none)";
  const size_t colon = id.find(':');
  return id.substr(0, colon == std::string::npos ? 12 : colon + 13);
}

// The ports whose shapes differ (at most three), described; empty if all match.
std::string shape_difference(const nlohmann::json& here, const nlohmann::json& cached) {
  const nlohmann::json hp = here.value("ports", nlohmann::json::object());
  const nlohmann::json cp = cached.value("ports", nlohmann::json::object());
  if (!hp.is_object() || !cp.is_object()) return {};
  std::string out;
  int listed = 0;
  for (auto it = hp.begin(); it != hp.end() && listed < 3; ++it) {
    const nlohmann::json other = cp.contains(it.key()) ? cp.at(it.key()) : nlohmann::json();
    if (other == it.value()) continue;
    out += std::string(listed++ ? ", " : "") + "port '" + it.key() + "' is " + shape_text(it.value()) + " here, " +
           shape_text(other) + " in the cache";
  }
  return out.empty() ? out : "shape (" + out + ")";
}

}  // namespace

std::string explain_miss(const std::string& dir, const KeyParts& parts, const std::string& key,
                         const nlohmann::json& summary) {
  (void)key;
  Store store(dir);
  int best_score = -1;
  std::vector<std::string> best_diffs;
  bool best_same_structure = false;
  int entries = 0;
  for (const std::string& path : store.files(".entry")) {
    Entry e;
    nlohmann::json meta;
    try {
      std::vector<uint8_t> bytes = read_file(path);
      e = decode_entry(bytes.data(), bytes.size());
      meta = nlohmann::json::parse(e.metadata);
    } catch (const std::exception&) {
      continue;  // corrupt entries are quarantined when read for real
    }
    ++entries;
    const KeyParts other = key_parts_from_json(meta.value("key_parts", nlohmann::json::object()));
    const nlohmann::json osum = meta.value("summary", nlohmann::json::object());
    std::vector<std::string> diffs;
    if (other.backend != parts.backend)
      diffs.push_back("backend (" + parts.backend + " here, " + other.backend + " in the cache)");
    if (other.compiler_version != parts.compiler_version)
      diffs.push_back("compiler version (" + parts.compiler_version + " here, " + other.compiler_version +
                      " in the cache)");
    if (other.plugin_binary != parts.plugin_binary)
      diffs.push_back("plugin binary (" + short_id(parts.plugin_binary) + " here, " + short_id(other.plugin_binary) +
                      " in the cache: a different build of the plugin)");
    if (other.device_fingerprint != parts.device_fingerprint)
      diffs.push_back("device (fingerprint " + short_fp(parts.device_fingerprint) + " here, " +
                      short_fp(other.device_fingerprint) + " in the cache)");
    if (std::string s = shape_difference(summary, osum); !s.empty()) diffs.push_back(s);
    if (other.options != parts.options)
      diffs.push_back("codegen options (" + parts.options + " here, " + other.options + " in the cache)");
    const bool same_structure = summary.is_object() && osum.is_object() && summary.contains("structure") &&
                                osum.value("structure", "") == summary.value("structure", "");
    const int score = (same_structure ? 100 : 0) - static_cast<int>(diffs.size());
    if (score > best_score) {
      best_score = score;
      best_diffs = diffs;
      best_same_structure = same_structure;
    }
  }
  if (entries == 0) return "the cache holds no entries (nothing was precompiled into it)";
  std::string d;
  for (const std::string& s : best_diffs) d += (d.empty() ? "" : "; ") + s;
  if (!best_same_structure)
    return "no cached graph has this structure (ops and ports: a different model or graph)" +
           (d.empty() ? std::string() : "; the nearest also differs in " + d);
  if (d.empty())
    return "the nearest cached entry has the same backend, compiler version, plugin binary, device, shapes and "
           "options, "
           "but "
           "different graph constants (e.g. hyper-parameters baked into the graph)";
  return "the nearest cached entry differs in " + d;
}

}  // namespace kiln::compiler_cache
