// Flags' two list kinds: add()'s lists keep the last occurrence's values, as
// Megatron's argparse flags do, while add_repeatable()'s grow with every
// occurrence (`kiln check-backend --hint A=1 --hint B=2` sets both).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "trainer/flags.h"

namespace kiln::trainer {
namespace {

TEST(Flags, RepeatableListsGrowAndPlainListsKeepTheLast) {
  Flags f("test");
  std::vector<std::string> hints, paths;
  f.add_repeatable("--hint", &hints, "environment hints");
  f.add("--data-path", &paths, "datasets");
  ASSERT_TRUE(
      f.parse({"--hint", "A=1", "--data-path", "x", "y", "--hint", "B=2", "C=3", "--data-path", "z", "--hint=D=4"}));
  EXPECT_EQ(hints, (std::vector<std::string>{"A=1", "B=2", "C=3", "D=4"}));
  EXPECT_EQ(paths, (std::vector<std::string>{"z"}));
  EXPECT_TRUE(f.given("--hint"));
}

}  // namespace
}  // namespace kiln::trainer
