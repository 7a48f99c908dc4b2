#include "compiler_cache/usage_log.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <sstream>

#include <nlohmann/json.hpp>

#include "compiler_cache/lock.h"
#include "core/regular_file.h"

namespace kiln::compiler_cache {

std::string usage_log_path(const std::string& root) { return root + "/usage.log"; }

bool append_usage(const std::string& root, const UsageRecord& r) {
  const nlohmann::json line = {{"unix", static_cast<int64_t>(std::time(nullptr))},
                               {"host", this_host()},
                               {"pid", static_cast<int64_t>(::getpid())},
                               {"hits", r.hits},
                               {"misses", r.misses},
                               {"saved_s", r.seconds_saved},
                               {"compile_s", r.compile_seconds}};
  const std::string text = line.dump() + "\n";
  // O_NONBLOCK: a FIFO with no reader fails the open (ENXIO) instead of
  // blocking every run's set-up; anything but a regular file is skipped.
  const int fd = ::open(usage_log_path(root).c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NONBLOCK, 0644);
  if (fd < 0) return false;
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return false;
  }
  // One write: O_APPEND places it whole at the end, after any other
  // process's line.
  const bool whole = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  return whole;
}

UsageTotals read_usage(const std::string& root) {
  UsageTotals t;
  const std::string path = usage_log_path(root);
  std::error_code ec;
  if (!std::filesystem::exists(std::filesystem::symlink_status(path, ec))) return t;
  std::istringstream in(
      read_input({path, "the cache's usage log", "remove it (kiln starts a new one)", kMaxLogFileBytes}));
  std::string text;
  while (std::getline(in, text)) {
    if (text.empty()) continue;
    try {
      const nlohmann::json j = nlohmann::json::parse(text);
      const int64_t unix_time = j.at("unix").get<int64_t>();
      t.sum.hits += j.at("hits").get<int64_t>();
      t.sum.misses += j.at("misses").get<int64_t>();
      t.sum.seconds_saved += j.at("saved_s").get<double>();
      t.sum.compile_seconds += j.at("compile_s").get<double>();
      t.first_unix = t.records == 0 ? unix_time : std::min(t.first_unix, unix_time);
      t.last_unix = std::max(t.last_unix, unix_time);
      ++t.records;
    } catch (const nlohmann::json::exception&) {
      ++t.skipped;
    }
  }
  return t;
}

}  // namespace kiln::compiler_cache
