// Reading tokenizer.json's components: each field read names its place in
// the file ("tokenizer.json: pre_tokenizer.pretokenizers[1]") in the
// one-line kiln::Error a wrong or missing value gives.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "core/error.h"

namespace kiln::data::hf {

using nlohmann::json;

// A place in tokenizer.json, e.g. "tokenizer.json: model".
struct Where {
  std::string path;
  Where at(const std::string& key) const { return Where{path + "." + key}; }
  Where at(size_t index) const { return Where{path + "[" + std::to_string(index) + "]"}; }
  [[noreturn]] void fail(const std::string& what) const { throw Error(path + " " + what); }
};

// obj[key], which must exist (not null) and have the JSON type `is`.
inline const json& need(const json& obj, const char* key, const Where& where, bool (json::*is)() const noexcept,
                        const char* type_name) {
  if (!obj.is_object()) where.fail("is not a JSON object");
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) where.fail(std::string("has no \"") + key + "\"");
  if (!((*it).*is)()) where.at(key).fail(std::string("is not ") + type_name);
  return *it;
}
inline std::string need_string(const json& obj, const char* key, const Where& where) {
  return need(obj, key, where, &json::is_string, "a string").get<std::string>();
}
inline const json& need_array(const json& obj, const char* key, const Where& where) {
  return need(obj, key, where, &json::is_array, "an array");
}
// obj[key] as a bool, or `fallback` when absent or null.
inline bool opt_bool(const json& obj, const char* key, const Where& where, bool fallback) {
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return fallback;
  if (!it->is_boolean()) where.at(key).fail("is not true or false");
  return it->get<bool>();
}
// The component's "type".
inline std::string type_of(const json& obj, const Where& where) { return need_string(obj, "type", where); }

// The error for a component kiln does not implement.
[[noreturn]] inline void unsupported(const Where& where, const std::string& type, const char* kiln_has) {
  where.fail("type \"" + type + "\" is not supported; kiln has " + kiln_has);
}

}  // namespace kiln::data::hf
