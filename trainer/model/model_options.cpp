#include "trainer/model/model_options.h"

#include "core/error.h"
#include "trainer/flags.h"
#include "trainer/model/gpt.h"

namespace kiln::trainer {

const char* to_string(Normalization n) { return n == Normalization::RMSNorm ? "RMSNorm" : "LayerNorm"; }

const char* to_string(PositionEmbedding p) {
  switch (p) {
    case PositionEmbedding::LearnedAbsolute: return "learned_absolute";
    case PositionEmbedding::Rope: return "rope";
    case PositionEmbedding::None: return "none";
    case PositionEmbedding::Alibi: return "alibi";
  }
  return "?";
}

Normalization parse_normalization(const std::string& s) {
  for (Normalization n : {Normalization::LayerNorm, Normalization::RMSNorm})
    if (s == to_string(n)) return n;
  throw Error("--normalization " + s + " is not one of LayerNorm, RMSNorm");
}

PositionEmbedding parse_position_embedding(const std::string& s) {
  for (PositionEmbedding p :
       {PositionEmbedding::LearnedAbsolute, PositionEmbedding::Rope, PositionEmbedding::None, PositionEmbedding::Alibi})
    if (s == to_string(p)) return p;
  throw Error("--position-embedding-type " + s + " is not one of learned_absolute, rope, none, alibi");
}

namespace {

using namespace model_option;

// One overload per codec: how its flag binds to the field.
void add(Flags& f, Int, const char* flag, int64_t& v, const char* help) { f.add(flag, &v, help); }
void add(Flags& f, Real, const char* flag, float& v, const char* help) { f.add(flag, &v, help); }
void add(Flags& f, NonNegativeReal, const char* flag, float& v, const char* help) {
  f.add(flag, &v, help, Bounds::at_least(0));
}
void add(Flags& f, Switch, const char* flag, bool& v, const char* help) { f.add(flag, &v, help); }
void add(Flags& f, NoSwitch, const char* flag, bool& v, const char* help) { f.add_negated(flag, &v, help); }
template <kiln_op Op>
void add(Flags& f, ActivationOp<Op>, const char* flag, bool& v, const char* help) {
  f.add(flag, &v, help);
}
template <typename Enum, Enum (*Parse)(const std::string&)>
void add(Flags& f, Choice<Enum, Parse>, const char* flag, Enum& v, const char* help) {
  f.add_parsed(
      flag, [&v](const std::string& s) { v = Parse(s); }, [&v] { return std::string(to_string(v)); }, help);
}

// Rows without a flag are set through other flags (their comment says which).
template <typename Codec, typename T>
void add_if_flag(Flags& f, Codec codec, const char* flag, T& v, const char* help) {
  if (flag != nullptr) add(f, codec, flag, v, help);
}

}  // namespace

void register_model_flags(Flags& f, GptConfig& c) {
#define KILN_ADD_MODEL_FLAG(codec, field, default_value, flag, saved, hf, help) \
  add_if_flag(f, model_option::codec{}, flag, c.field, help);
  KILN_MODEL_OPTIONS(KILN_ADD_MODEL_FLAG)
#undef KILN_ADD_MODEL_FLAG
}

void take_architecture(GptConfig& to, const ModelArchitecture& from) { static_cast<ModelArchitecture&>(to) = from; }

}  // namespace kiln::trainer
