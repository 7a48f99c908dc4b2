// kiln::Error: the one exception type the host throws for user-facing
// failures. Its message is a single line naming the thing and the fix; the
// CLI prints it as "kiln: error: <message>" and exits non-zero.
#pragma once

#include <stdexcept>
#include <string>

namespace kiln {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// A failure whose one line is already on stderr (a child process printed it
// before it ended): the CLI exits 1 without a second line.
class ReportedError : public Error {
 public:
  explicit ReportedError(const std::string& what) : Error(what) {}
};

}  // namespace kiln
