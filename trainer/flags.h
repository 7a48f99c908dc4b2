// A small command-line flag parser with Megatron-LM's conventions:
// `--flag value`, `--flag=value`, boolean switches, and multi-value flags
// such as `--data-path 0.7 a 0.3 b`. Each command declares its flags once
// (name, target, help); parsing, --help text and errors come from that one
// table. Unknown flags and bad values throw kiln::Error naming the flag.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace kiln::trainer {

class Flags {
 public:
  explicit Flags(std::string command) : command_(std::move(command)) {}

  void add(const std::string& name, int64_t* target, const std::string& help);
  void add(const std::string& name, double* target, const std::string& help);
  void add(const std::string& name, std::string* target, const std::string& help);
  void add(const std::string& name, bool* target, const std::string& help);  // switch
  void add(const std::string& name, std::vector<std::string>* target, const std::string& help);

  // Parses args; returns false if --help was given (help already printed).
  bool parse(const std::vector<std::string>& args);
  // True if the flag appeared on the command line.
  bool given(const std::string& name) const;
  std::string help() const;

 private:
  enum class Kind { Int, Double, String, Bool, List };
  struct Spec {
    std::string name;
    Kind kind;
    void* target;
    std::string help;
    std::string default_text;
  };
  void add_spec(const std::string& name, Kind kind, void* target, const std::string& help);
  const Spec* find(const std::string& name) const;

  std::string command_;
  std::vector<Spec> specs_;
  std::vector<std::string> given_;
};

}  // namespace kiln::trainer
