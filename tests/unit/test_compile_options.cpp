// The device plugins' reading of compile's options (backends/common/
// compile_options.h): hints kiln passes, never part of what a graph computes.
#include <gtest/gtest.h>

#include "compile_options.h"

namespace {

using kiln::backend::parse_compile_options;
using kiln::plugin_kit::Failure;

TEST(CompileOptions, NoOptionsAndUnknownKeysGiveTheDefaults) {
  EXPECT_FALSE(parse_compile_options(nullptr).ahead_of_time);
  EXPECT_FALSE(parse_compile_options("{}").ahead_of_time);
  EXPECT_FALSE(parse_compile_options(R"({"some_later_hint": [1, 2]})").ahead_of_time);
}

TEST(CompileOptions, PrecompileSaysAheadOfTime) {
  EXPECT_TRUE(parse_compile_options(R"({"ahead_of_time": true})").ahead_of_time);
  EXPECT_FALSE(parse_compile_options(R"({"ahead_of_time": false, "x": 1})").ahead_of_time);
}

TEST(CompileOptions, TextThatIsNoObjectOrAWrongTypeIsAnInvalidArgument) {
  for (const char* bad : {"", "[true]", "{\"ahead_of_time\": tru", "{\"ahead_of_time\": 1}", "null"}) {
    try {
      parse_compile_options(bad);
      ADD_FAILURE() << "accepted: " << bad;
    } catch (const Failure& f) {
      EXPECT_EQ(f.code, KILN_ERR_INVALID_ARGUMENT) << bad;
      EXPECT_NE(std::string(f.message).find("compile option"), std::string::npos) << f.message;
    }
  }
}

}  // namespace
