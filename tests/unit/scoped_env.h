// An environment variable set (or unset, for a null value) for one scope
// and restored after it: tests of the hints plugins read from the
// environment (KILN_CPU_ISA, KILN_VULKAN_GEMM, ...).
#pragma once

#include <cstdlib>
#include <optional>
#include <string>

namespace kiln::test {

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value != nullptr)
      setenv(name, value, 1);
    else
      unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      setenv(name_, old_->c_str(), 1);
    else
      unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

}  // namespace kiln::test
