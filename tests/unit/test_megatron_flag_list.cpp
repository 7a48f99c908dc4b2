// Every flag of Megatron's argument list (tests/data/megatron_flags.txt, made
// by scripts/megatron_flags.py) is either implemented by `kiln train` or has
// a row in the compatibility table (no effect, only kiln's value, warns, or
// refused with a reason). A flag Megatron adds shows up here once the list is
// made again, until kiln decides what to do with it.
#include <gtest/gtest.h>

#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "trainer/flags.h"
#include "trainer/megatron_compat_flags.h"
#include "trainer/train_config.h"

using kiln::trainer::CompatArity;
using kiln::trainer::CompatFlag;
using kiln::trainer::CompatKind;
using kiln::trainer::megatron_compat_flags;

namespace {

struct ListedFlag {
  std::string name, arity;
};

std::vector<ListedFlag> megatron_flags() {
  std::ifstream in(std::string(KILN_TEST_DATA_DIR) + "/megatron_flags.txt");
  std::vector<ListedFlag> out;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    ListedFlag f;
    fields >> f.name >> f.arity;
    out.push_back(f);
  }
  return out;
}

const char* arity_name(CompatArity a) {
  return a == CompatArity::Switch ? "switch" : a == CompatArity::One ? "one" : "many";
}

const char* kind_name(CompatKind k) {
  switch (k) {
    case CompatKind::NoEffect: return "no-effect";
    case CompatKind::KilnValue: return "kiln-value";
    case CompatKind::NotProvided: return "warns";
    case CompatKind::Refused: return "refused";
  }
  return "?";
}

}  // namespace

TEST(MegatronFlagList, EveryFlagIsImplementedOrInTheCompatibilityTable) {
  const std::vector<ListedFlag> listed = megatron_flags();
  ASSERT_GT(listed.size(), 800u) << "tests/data/megatron_flags.txt is missing or short";
  kiln::trainer::TrainConfig cfg;
  kiln::trainer::Flags flags("train");
  cfg.register_flags(flags);
  std::map<std::string, const CompatFlag*> table;
  for (const CompatFlag& row : megatron_compat_flags()) table[row.name] = &row;
  std::map<std::string, int> split;
  for (const ListedFlag& f : listed) {
    const auto row = table.find(f.name);
    if (row == table.end()) {
      EXPECT_TRUE(flags.knows(f.name)) << f.name
                                       << ": neither a kiln train flag nor a row of the compatibility table "
                                          "(trainer/megatron_compat_rows.h)";
      ++split["implemented"];
      continue;
    }
    // A row parses the flag as Megatron does, so a value is never taken for the next flag.
    EXPECT_EQ(arity_name(row->second->arity), f.arity) << f.name << ": the row's arity differs from Megatron's";
    ++split[kind_name(row->second->kind)];
  }
  std::string summary;
  for (const auto& [kind, n] : split) summary += " " + kind + " " + std::to_string(n);
  std::cout << listed.size() << " Megatron flags:" << summary << "\n";
}
