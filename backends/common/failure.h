// The exception every backend plugin throws internally to carry a kiln error
// code up to its ABI boundary, where it becomes a kiln_error. Shared by the
// plugins in backends/ (never crosses the C boundary itself).
#pragma once

#include <cstdint>
#include <string>

#include "kiln/plugin.h"

#pragma GCC visibility push(hidden)

namespace kiln::backend {

struct Failure {
  int32_t code;
  std::string message;
};

[[noreturn]] inline void fail(int32_t code, std::string message) { throw Failure{code, std::move(message)}; }

}  // namespace kiln::backend

#pragma GCC visibility pop
