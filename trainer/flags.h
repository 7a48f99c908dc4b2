// A small command-line flag parser with Megatron-LM's conventions:
// `--flag value`, `--flag=value`, boolean switches, and multi-value flags
// such as `--data-path 0.7 a 0.3 b`. Each command declares its flags once
// (name, target, help); parsing, --help text and errors come from that one
// table. Unknown flags and bad values throw kiln::Error naming the flag.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace kiln::trainer {

// The values a number flag accepts, checked when it is parsed so that a
// bad value is refused before any work, with the flag's name. Every number
// flag refuses NaN and infinities: a NaN passes every `x <= 0` check and
// then poisons whatever it reaches (a learning rate, a timeout).
struct Bounds {
  double lo = -std::numeric_limits<double>::max();
  double hi = std::numeric_limits<double>::max();
  bool lo_open = false, hi_open = false;  // open: the bound itself is refused

  static Bounds any() { return {}; }
  static Bounds at_least(double lo) { return {lo, std::numeric_limits<double>::max(), false, false}; }
  static Bounds above(double lo) { return {lo, std::numeric_limits<double>::max(), true, false}; }
  static Bounds closed(double lo, double hi) { return {lo, hi, false, false}; }
  static Bounds half_open(double lo, double hi) { return {lo, hi, false, true}; }  // [lo, hi)
  static Bounds left_open(double lo, double hi) { return {lo, hi, true, false}; }  // (lo, hi]

  bool contains(double v) const;
  std::string describe() const;  // "in [0, 1)", "at least 0", "above 0"
};

class Flags {
 public:
  explicit Flags(std::string command) : command_(std::move(command)) {}

  void add(const std::string& name, int64_t* target, const std::string& help, Bounds bounds = {});
  void add(const std::string& name, double* target, const std::string& help, Bounds bounds = {});
  void add(const std::string& name, std::string* target, const std::string& help);
  void add(const std::string& name, bool* target, const std::string& help);  // switch
  void add(const std::string& name, std::vector<std::string>* target, const std::string& help);
  // A float (a model option, kept as float in the config and meta.json): a
  // value finite as a double but not as a float, or not 0 but 0 as a float,
  // is refused rather than trained with as inf or 0.
  void add(const std::string& name, float* target, const std::string& help, Bounds bounds = {});
  // A switch that turns its target off (Megatron's --disable-... flags).
  void add_negated(const std::string& name, bool* target, const std::string& help);
  // A value only `parse` understands (a choice among names): it stores it,
  // or throws kiln::Error naming the flag; `show` gives the current value.
  void add_parsed(const std::string& name, std::function<void(const std::string&)> parse,
                  std::function<std::string()> show, const std::string& help);
  // A list that grows with every occurrence (`--hint A=1 --hint B=2`), where
  // add()'s lists, as argparse's, keep the last occurrence's values.
  void add_repeatable(const std::string& name, std::vector<std::string>* target, const std::string& help);
  // Another name for the added flag `name` (Megatron's name before a rename,
  // which old launch scripts pass): the same target, kind and bounds. Giving
  // both names is refused: one would silently override the other.
  void add_alias(const std::string& alias, const std::string& name, const std::string& help);
  // The flags added from now on belong to a titled section, which --help
  // lists after the untitled flags; section("") returns to the untitled list.
  // A section with a summary is folded: --help prints the summary in place
  // of its flags, and only --help-all lists them (kiln train's hundreds of
  // Megatron compatibility rows would bury its own flags).
  void section(const std::string& title, const std::string& summary = "") {
    section_ = title;
    if (!summary.empty()) summaries_.emplace_back(title, summary);
  }

  // Parses args; returns false if --help or --help-all was given (the help
  // already printed).
  bool parse(const std::vector<std::string>& args);
  // True if the flag appeared on the command line.
  bool given(const std::string& name) const;
  // True if the flag is registered (tests/unit/test_megatron_flag_list.cpp).
  bool knows(const std::string& name) const { return find(name) != nullptr; }
  // --help's text; with all, every folded section's flags too (--help-all).
  std::string help(bool all = false) const;
  // Every flag's name and current value as text (switches "true"/"false",
  // lists joined by spaces), in declaration order: what a run was told.
  std::vector<std::pair<std::string, std::string>> values() const;

 private:
  enum class Kind { Int, Double, Float, String, Bool, NegatedBool, List, Repeatable, Parsed };
  struct Spec {
    std::string name;
    Kind kind;
    void* target;
    std::string help;
    std::string default_text;
    Bounds bounds;
    std::string section;
    std::function<void(const std::string&)> parse;  // Kind::Parsed
    std::function<std::string()> show;              // Kind::Parsed
  };
  void add_spec(const std::string& name, Kind kind, void* target, const std::string& help, Bounds bounds = {});
  const Spec* find(const std::string& name) const;

  std::string command_;
  std::vector<Spec> specs_;
  std::string section_;                                         // of the flags being added
  std::vector<std::pair<std::string, std::string>> summaries_;  // folded sections: title, summary
  std::vector<std::string> given_;
  std::vector<std::pair<std::string, std::string>> aliases_;  // alias, name
};

}  // namespace kiln::trainer
