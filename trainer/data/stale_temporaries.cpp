#include "trainer/data/stale_temporaries.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

namespace kiln::data {

namespace {

// The pid in "<name>.tmp.<pid>" (all digits), or 0.
pid_t writer_pid(const std::string& file, const std::string& stem) {
  if (file.size() <= stem.size() || file.compare(0, stem.size(), stem) != 0) return 0;
  const std::string digits = file.substr(stem.size());
  if (digits.empty() || digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) return 0;
  return static_cast<pid_t>(std::stol(digits));
}

// Only ESRCH proves the writer is gone; EPERM means a live process of
// another user.
bool dead(pid_t pid) { return pid > 0 && pid != ::getpid() && ::kill(pid, 0) != 0 && errno == ESRCH; }

}  // namespace

std::vector<std::string> remove_dead_writers_entries(const std::string& dir, const std::string& stem) {
  namespace fs = std::filesystem;
  std::vector<std::string> removed;
  std::error_code ec;
  fs::directory_iterator it(dir.empty() ? fs::path(".") : fs::path(dir), ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    if (!dead(writer_pid(it->path().filename().string(), stem))) continue;
    std::error_code rm;
    if (fs::remove_all(it->path(), rm) > 0 && !rm) removed.push_back(it->path().string());
  }
  return removed;
}

std::vector<std::string> remove_dead_writers_temporaries(const std::string& prefix) {
  namespace fs = std::filesystem;
  std::vector<std::string> removed;
  const fs::path p(prefix);
  const fs::path dir = p.has_parent_path() ? p.parent_path() : fs::path(".");
  const std::string base = p.filename().string();
  std::error_code ec;
  fs::directory_iterator it(dir, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    for (const char* ext : {".bin", ".idx", ".lengths", ".docs"}) {
      const pid_t pid = writer_pid(name, base + ext + ".tmp.");
      if (!dead(pid) || !it->is_regular_file(ec)) continue;
      std::error_code rm;
      if (fs::remove(it->path(), rm)) removed.push_back(it->path().string());
    }
  }
  return removed;
}

}  // namespace kiln::data
