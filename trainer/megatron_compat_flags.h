// Megatron-LM flags that have no feature of their own behind them in kiln:
// one table, one row per flag, each row saying what kiln does with the flag
// and why. A real launch script passes many flags that pick an
// implementation detail of Megatron (a fused kernel, an attention backend, a
// Python GC policy, data-loader workers): kiln has one implementation of
// each and computes the same thing, so it accepts them and says so once at
// start-up. Flags that ask for a feature kiln lacks (FP8, MoE, context
// parallelism) are refused in one line naming the feature. Values are still
// checked against Megatron's arity and choices, so a typo fails as it would
// in Megatron. docs/MEGATRON_FLAGS.md holds the same table (a unit test compares them).
#pragma once

#include <map>
#include <string>
#include <vector>

#include "trainer/flags.h"

namespace kiln::trainer {

enum class CompatKind {
  NoEffect,     // picks an implementation kiln has only one of: the computation is the same
  KilnValue,    // accepted with the value(s) that describe what kiln does; any other value is refused
  NotProvided,  // asks for an output kiln does not produce (W&B, a profile): accepted, with a warning
  Refused,      // asks for a feature kiln lacks: refused whenever given
};

enum class CompatArity { Switch, One, Many };        // store_true/false, one value, nargs='+'/'*'
enum class CompatValue { None, Int, Number, Text };  // the type of each value

struct CompatFlag {
  std::string name;
  CompatArity arity;
  CompatValue value;
  std::vector<std::string> choices;  // Megatron's choices; empty: any value of the type
  CompatKind kind;
  std::vector<std::string> kiln_values;  // KilnValue: the values that say what kiln does
  std::string why;                       // shown in --help, the error, the warning and docs/MEGATRON_FLAGS.md
  // Accepted only together with this flag's value, as Megatron requires (empty: no condition).
  std::string needs_flag, needs_value;
};

// Every row, in the order of --help and docs/MEGATRON_FLAGS.md.
const std::vector<CompatFlag>& megatron_compat_flags();
// "no effect", "only 1", "warns: not provided", "refused": the kind column of docs/MEGATRON_FLAGS.md.
std::string describe_kind(const CompatFlag& row);
// The table as docs/MEGATRON_FLAGS.md prints it (markdown), generated from the rows.
std::string compat_flags_markdown();

class MegatronCompatFlags {
 public:
  // Registers every row with `flags`, under a --help section of its own.
  void register_flags(Flags& flags);
  // Checks each given row (its values' type and Megatron's choices, a
  // KilnValue row's value, a refused row, a needed flag), throwing
  // kiln::Error in one line naming the flag and the reason. Then logs one
  // info line listing the given flags that change nothing, and one warning
  // per reason for the given flags whose output kiln does not produce.
  void finalize(const Flags& flags) const;
  // The given flags accepted with no effect, with their values
  // ("--attention-backend fused"), in table order: the info line's list.
  std::vector<std::string> accepted_without_effect(const Flags& flags) const;

 private:
  struct Slot {
    bool on = false;
    std::string one;
    std::vector<std::string> many;
  };
  std::vector<std::string> values_of(const CompatFlag& row) const;
  std::map<std::string, Slot> slots_;  // by flag name; map nodes stay put for Flags' pointers
};

}  // namespace kiln::trainer
