#include "compiler_cache/usage_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <fstream>

#include <nlohmann/json.hpp>

#include "compiler_cache/lock.h"

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
  const int fd = ::open(usage_log_path(root).c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  // One write: O_APPEND places it whole at the end, after any other
  // process's line.
  const bool whole = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  return whole;
}

UsageTotals read_usage(const std::string& root) {
  UsageTotals t;
  std::ifstream in(usage_log_path(root));
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
