#include "trainer/data/tokenizers/hf/post_processor.h"

namespace kiln::data::hf {

namespace {

constexpr const char* kPostProcessors = "TemplateProcessing, ByteLevel, Sequence";

// Applies one processor to `around` (a Sequence applies each in turn, so a
// later template wraps what the earlier ones produced).
void apply(const json& node, const Where& where, SpecialTokensAround& around) {
  const std::string type = type_of(node, where);
  if (type == "ByteLevel") return;  // offsets only
  if (type == "Sequence") {
    const json& list = need_array(node, "processors", where);
    for (size_t i = 0; i < list.size(); ++i) apply(list[i], where.at("processors").at(i), around);
    return;
  }
  if (type != "TemplateProcessing") unsupported(where, type, kPostProcessors);
  const json& single = need_array(node, "single", where);
  const json& specials = need(node, "special_tokens", where, &json::is_object, "an object");
  SpecialTokensAround next;
  bool seen_a = false;
  for (size_t i = 0; i < single.size(); ++i) {
    const Where w = where.at("single").at(i);
    const json& piece = single[i];
    if (piece.contains("Sequence")) {
      std::string id = need_string(piece["Sequence"], "id", w.at("Sequence"));
      if (id != "A") w.fail("uses sequence $" + id + "; a single sequence has only $A");
      if (seen_a) w.fail("repeats $A");
      seen_a = true;
      next.before.insert(next.before.end(), around.before.begin(), around.before.end());
      next.after.insert(next.after.end(), around.after.begin(), around.after.end());
      continue;
    }
    if (!piece.contains("SpecialToken")) w.fail("is neither a SpecialToken nor a Sequence");
    std::string name = need_string(piece["SpecialToken"], "id", w.at("SpecialToken"));
    auto it = specials.find(name);
    if (it == specials.end()) w.fail("names special token '" + name + "', which special_tokens does not define");
    const json& ids = need_array(*it, "ids", where.at("special_tokens").at(name));
    for (const json& id : ids) {
      if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX)
        where.at("special_tokens").at(name).fail("has an id that is not a non-negative integer");
      (seen_a ? next.after : next.before).push_back(static_cast<int32_t>(id.get<int64_t>()));
    }
  }
  if (!seen_a) where.at("single").fail("has no $A");
  around = std::move(next);
}

}  // namespace

SpecialTokensAround make_post_processor(const json& node, const Where& where) {
  SpecialTokensAround around;
  if (!node.is_null()) apply(node, where, around);
  return around;
}

}  // namespace kiln::data::hf
