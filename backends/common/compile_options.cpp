#include "compile_options.h"

#include <nlohmann/json.hpp>

namespace kiln::backend {

CompileOptions parse_compile_options(const char* options) {
  CompileOptions out;
  if (options == nullptr) return out;
  const nlohmann::json j = nlohmann::json::parse(options, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object())
    plugin_kit::fail(KILN_ERR_INVALID_ARGUMENT, "compile options are not a JSON object: " + std::string(options));
  if (const auto it = j.find("ahead_of_time"); it != j.end()) {
    if (!it->is_boolean())
      plugin_kit::fail(KILN_ERR_INVALID_ARGUMENT, "compile option ahead_of_time is not true or false: " + it->dump());
    out.ahead_of_time = it->get<bool>();
  }
  return out;
}

}  // namespace kiln::backend
