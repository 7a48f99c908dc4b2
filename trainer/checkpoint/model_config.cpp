#include "trainer/checkpoint/model_config.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include "core/error.h"
#include "kiln/ops.h"

namespace kiln::trainer {

int64_t meta_integer(const nlohmann::json& meta, const char* key, int64_t fallback) {
  if (!meta.is_object() || !meta.contains(key)) return fallback;
  const nlohmann::json& v = meta.at(key);
  // Not get<int64_t>() on any number: a float too large for int64_t would be
  // undefined behaviour, and a corrupt meta.json must only cause an error.
  if (!v.is_number_integer())
    throw Error(std::string("checkpoint meta.json: '") + key + "' is " + v.dump() + ", not an integer");
  return v.get<int64_t>();
}

namespace {

using namespace model_option;

// Thrown at the first bad key and caught in model_config_from_json, which
// names the file (a caller may know its path) around it.
struct BadKey : std::runtime_error {
  using std::runtime_error::runtime_error;
};

BadKey bad_value(const char* key, const nlohmann::json& v, const char* expected) {
  return BadKey(std::string("'") + key + "' is " + v.dump() + ", not " + expected);
}

// The key a row is kept under: its field's name, or "activation" for an
// activation op's switch.
template <typename Codec>
const char* key_of(Codec, const char* field) {
  return field;
}
template <kiln_op Op>
const char* key_of(ActivationOp<Op>, const char*) {
  return "activation";
}

// One pair per codec: a field's value as meta.json keeps it, and back.
nlohmann::json to_json(Int, int64_t v) { return v; }
nlohmann::json to_json(Real, float v) { return v; }
nlohmann::json to_json(NonNegativeReal, float v) { return v; }
nlohmann::json to_json(Switch, bool v) { return v; }
nlohmann::json to_json(NoSwitch, bool v) { return v; }
// Off, it is not written (Saved::WhenNotDefault); false is what an error shows.
template <kiln_op Op>
nlohmann::json to_json(ActivationOp<Op>, bool v) {
  return v ? nlohmann::json(ActivationOp<Op>::name()) : nlohmann::json(false);
}
template <typename Enum, Enum (*Parse)(const std::string&)>
nlohmann::json to_json(Choice<Enum, Parse>, Enum v) {
  return to_string(v);
}

int64_t from_json(Int, const char* key, const nlohmann::json& v) {
  // Not get<int64_t>() on any number: a float too large for int64_t would be
  // undefined behaviour, and a corrupt meta.json must only cause an error.
  if (!v.is_number_integer()) throw bad_value(key, v, "an integer");
  return v.get<int64_t>();
}
float from_json(Real, const char* key, const nlohmann::json& v) {
  if (!v.is_number()) throw bad_value(key, v, "a number");
  // As the flags (trainer/flags.cpp): a value a float holds as inf, or as 0
  // though it is not 0 (a clip_qkv of 1e-300 would turn clipping off).
  const auto f = v.get<float>();
  if (!std::isfinite(f) || (f == 0 && v.get<double>() != 0))
    throw bad_value(key, v, "a number in the range of a float");
  return f;
}
float from_json(NonNegativeReal, const char* key, const nlohmann::json& v) {
  const float f = from_json(Real{}, key, v);
  if (f < 0) throw bad_value(key, v, "a number of at least 0");
  return f;
}
bool from_json(Switch, const char* key, const nlohmann::json& v) {
  if (!v.is_boolean()) throw bad_value(key, v, "true or false");
  return v.get<bool>();
}
bool from_json(NoSwitch, const char* key, const nlohmann::json& v) { return from_json(Switch{}, key, v); }
template <kiln_op Op>
bool from_json(ActivationOp<Op>, const char* key, const nlohmann::json& v) {
  if (!v.is_string() || v.get<std::string>() != ActivationOp<Op>::name())
    throw bad_value(key, v, "the op name of a supported MLP activation");
  return true;
}
template <typename Enum, Enum (*Parse)(const std::string&)>
Enum from_json(Choice<Enum, Parse>, const char* key, const nlohmann::json& v) {
  if (!v.is_string()) throw bad_value(key, v, "a string");
  try {
    return Parse(v.get<std::string>());
  } catch (const Error&) {
    throw bad_value(key, v, "a known choice");
  }
}

template <typename Codec, typename T>
void write(nlohmann::json& j, Codec codec, const char* field, const T& v, const T& default_value, Saved saved) {
  if (saved == Saved::WhenNotDefault && v == default_value) return;
  j[key_of(codec, field)] = to_json(codec, v);
}

template <typename Codec, typename T>
void read(const nlohmann::json& j, Codec codec, const char* field, T& v, Saved saved) {
  const char* key = key_of(codec, field);
  if (j.contains(key))
    v = from_json(codec, key, j.at(key));
  else if (saved == Saved::Required)
    throw BadKey(std::string("'") + key + "' is missing");
}

}  // namespace

// Every row of model_options.h. The sizes GptConfig derives when left at 0
// (ffn_hidden_size, num_query_groups, kv_channels) are written as derived,
// so a checkpoint states its model's shapes.
nlohmann::json model_config_json(const ModelArchitecture& arch) {
  const ModelArchitecture c = arch.with_derived_sizes(), defaults;
  nlohmann::json j = nlohmann::json::object();
#define KILN_WRITE_OPTION(codec, field, default_value, flag, saved, hf, help) \
  write(j, model_option::codec{}, #field, c.field, defaults.field, Saved::saved);
  KILN_MODEL_OPTIONS(KILN_WRITE_OPTION)
#undef KILN_WRITE_OPTION
  return j;
}

// Rows absent from an older checkpoint's meta.json keep their defaults: the
// model those checkpoints were trained with.
ModelArchitecture model_config_from_json(const nlohmann::json& j, const std::string& file) {
  const std::string fix = "; re-save the checkpoint or point --load at another one";
  if (j.is_null())
    throw Error(file + " has no \"config\" (the model's architecture, which every kiln checkpoint records)" + fix);
  if (!j.is_object())
    throw Error(file + " has no valid model config: \"config\" is " + j.dump().substr(0, 80) + ", not a JSON object" +
                fix);
  ModelArchitecture c;
  try {
#define KILN_READ_OPTION(codec, field, default_value, flag, saved, hf, help) \
  read(j, model_option::codec{}, #field, c.field, Saved::saved);
    KILN_MODEL_OPTIONS(KILN_READ_OPTION)
#undef KILN_READ_OPTION
  } catch (const BadKey& e) {
    throw Error(file + " has no valid model config: \"config\" key " + e.what() + fix);
  }
  // Sizes no kiln run could have saved (an edited num_layers of 1e9) are
  // refused naming the file, not only a flag the user never gave.
  try {
    GptConfig(c).validate();
  } catch (const Error& e) {
    throw Error(file + " describes a model kiln cannot build (was it edited?): " + e.what());
  }
  return c;
}

std::vector<std::string> model_config_differences(const ModelArchitecture& saved, const ModelArchitecture& wanted) {
  const ModelArchitecture x = saved.with_derived_sizes(), y = wanted.with_derived_sizes();
  std::vector<std::string> out;
  auto compare = [&](const char* key, const nlohmann::json& a, const nlohmann::json& b) {
    if (a != b && std::string(key) != "init_method_std")
      out.push_back(nlohmann::json(key).dump() + ":" + a.dump() + " (this run: " + b.dump() + ")");
  };
#define KILN_COMPARE_OPTION(codec, field, ...)                                            \
  compare(key_of(model_option::codec{}, #field), to_json(model_option::codec{}, x.field), \
          to_json(model_option::codec{}, y.field));
  KILN_MODEL_OPTIONS(KILN_COMPARE_OPTION)
#undef KILN_COMPARE_OPTION
  return out;
}

}  // namespace kiln::trainer
