// Numbers that survive a double but not the 32-bit model config, or that
// underflow, are refused where they enter: the flags and meta.json.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "core/error.h"
#include "trainer/checkpoint/model_config.h"
#include "trainer/flags.h"
#include "trainer/model/gpt.h"

namespace kiln::trainer {
namespace {

std::string parse_error(Flags& f, const std::string& flag, const std::string& value) {
  try {
    f.parse({flag, value});
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// N35 and G6c: an underflow was "expects a finite number" (strtod's ERANGE);
// a float target names its range, a double takes a denormal as given, and
// a value below every magnitude (0 after parsing) is refused, never read as 0.
TEST(NumberRanges, UnderflowsNamedNotCalledInfinite) {
  Flags f("test");
  float clip = 0;
  double temperature = 1;
  f.add("--clip-qkv", &clip, "clip");
  f.add("--temperature", &temperature, "temperature", Bounds::at_least(0));
  EXPECT_NE(parse_error(f, "--clip-qkv", "1e-310").find("outside the range of the model's 32-bit config"),
            std::string::npos);
  EXPECT_NE(parse_error(f, "--clip-qkv", "1e-400").find("--clip-qkv 1e-400 is not 0 but below the smallest"),
            std::string::npos);
  EXPECT_NE(parse_error(f, "--temperature", "1e-400").find("not 0 but below"), std::string::npos);
  EXPECT_EQ(parse_error(f, "--temperature", "1e-320"), "");
  EXPECT_GT(temperature, 0.0);
  EXPECT_NE(parse_error(f, "--temperature", "1e400").find("expects a finite number"), std::string::npos);
}

// N34: --clip-qkv 1e300 trained as inf and saved as null, which --load refused.
TEST(NumberRanges, FloatFlagOverflowRefusedAtParse) {
  for (const char* flag : {"--clip-qkv", "--norm-epsilon", "--alibi-bias-max", "--rope-scaling-factor"}) {
    GptConfig c;
    Flags f("train");
    register_model_flags(f, c);
    EXPECT_NE(parse_error(f, flag, "1e300").find("outside the range of the model's 32-bit config"), std::string::npos)
        << flag;
  }
}

// N34: a meta.json clip_qkv of 1e-300 read as 0, which turns clipping off.
TEST(NumberRanges, MetaJsonValueThatIsZeroAsFloatRefused) {
  nlohmann::json j = model_config_json(GptConfig{});
  j["clip_qkv"] = 1e-300;
  EXPECT_THROW(model_config_from_json(j), Error);
  j["clip_qkv"] = 0.5;
  EXPECT_FLOAT_EQ(model_config_from_json(j).clip_qkv, 0.5f);
}

}  // namespace
}  // namespace kiln::trainer
