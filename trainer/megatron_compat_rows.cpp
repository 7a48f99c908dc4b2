#include "trainer/megatron_compat_rows.h"

#include <sstream>
#include <string>

namespace kiln::trainer {

namespace {

std::vector<std::string> split_commas(const char* text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string word; std::getline(in, word, ',');)
    if (!word.empty()) out.push_back(word);
  return out;
}

}  // namespace

std::vector<CompatFlag> to_rows(const CompatRowSpec* rows, size_t count) {
  std::vector<CompatFlag> out;
  out.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    const CompatRowSpec& r = rows[i];
    out.push_back(
        {r.name, r.arity, r.value, split_commas(r.choices), r.kind, split_commas(r.kiln_values), r.why, "", ""});
  }
  return out;
}

}  // namespace kiln::trainer
