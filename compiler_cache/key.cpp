#include "compiler_cache/key.h"

#include "core/hash.h"

namespace kiln::compiler_cache {

std::string compute_key(const KeyParts& p) {
  // Length-prefixed fields: no two different part lists share a preimage.
  std::string s = "kiln-compile-key-v1";
  // append() rather than operator+ chains: GCC 12 warns falsely on those
  // at -O3 (-Wrestrict, GCC bug 105329).
  for (const std::string* f : {&p.backend, &p.compiler_version, &p.device_fingerprint, &p.options, &p.ir_hash})
    s.append("|").append(std::to_string(f->size())).append(":").append(*f);
  // Appended only when known: an entry written before plugin binaries were
  // keyed (none recorded) still verifies against its own key, and is simply
  // never looked up again, since every key computed now names a binary.
  if (!p.plugin_binary.empty())
    s.append("|plugin_binary|").append(std::to_string(p.plugin_binary.size())).append(":").append(p.plugin_binary);
  return sha256_hex(s.data(), s.size());
}

nlohmann::json key_parts_json(const KeyParts& p) {
  return {{"backend", p.backend},
          {"compiler_version", p.compiler_version},
          {"device_fingerprint", p.device_fingerprint},
          {"options", p.options},
          {"ir_hash", p.ir_hash},
          {"plugin_binary", p.plugin_binary}};
}

KeyParts key_parts_from_json(const nlohmann::json& j) {
  KeyParts p;
  auto get = [&](const char* k, std::string& out) {
    if (j.is_object() && j.contains(k) && j.at(k).is_string()) out = j.at(k).get<std::string>();
  };
  get("backend", p.backend);
  get("compiler_version", p.compiler_version);
  get("device_fingerprint", p.device_fingerprint);
  get("options", p.options);
  get("ir_hash", p.ir_hash);
  get("plugin_binary", p.plugin_binary);
  return p;
}

std::string path_component(const std::string& s) {
  std::string out = s.empty() ? "unknown" : s;
  for (char& c : out)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
          c == '-'))
      c = '_';
  // Returned, not assigned: GCC 12 at -O2 with the sanitizers reports a
  // false -Wrestrict overlap for `out = "_"`.
  if (out == "." || out == "..") return "_";
  return out;
}

}  // namespace kiln::compiler_cache
