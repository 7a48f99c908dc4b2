#include "core/log.h"

#include <spdlog/sinks/stdout_sinks.h>

#include <cstdlib>
#include <memory>
#include <optional>
#include <string>

namespace kiln {
namespace {

std::optional<spdlog::level::level_enum> parse_level(const std::string& s) {
  // Parsed by hand: spdlog::level::from_str maps unknown names to "off",
  // which would silently hide every warning after a typo.
  if (s == "trace") return spdlog::level::trace;
  if (s == "debug") return spdlog::level::debug;
  if (s == "info") return spdlog::level::info;
  if (s == "warn" || s == "warning") return spdlog::level::warn;
  if (s == "error") return spdlog::level::err;
  if (s == "off") return spdlog::level::off;
  return std::nullopt;
}

std::shared_ptr<spdlog::logger> make_logger() {
  // Plain stderr sink (no colors): logs are often redirected to files and
  // stdout is reserved for command output and training lines.
  auto sink = std::make_shared<spdlog::sinks::stderr_sink_mt>();
  auto log = std::make_shared<spdlog::logger>("kiln", sink);
  log->set_pattern("[kiln] [%l] %v");
  log->set_level(spdlog::level::info);
  // Flush on every warning so messages are not lost if the process dies.
  log->flush_on(spdlog::level::warn);

  const char* env = std::getenv("KILN_LOG_LEVEL");
  if (env != nullptr && *env != '\0') {
    if (auto level = parse_level(env)) {
      log->set_level(*level);
    } else {
      log->warn("KILN_LOG_LEVEL='{}' is not one of trace|debug|info|warn|error|off; using info", env);
    }
  }
  return log;
}

}  // namespace

spdlog::logger& logger() {
  // Held for the process lifetime (never registered globally) so logging
  // from static destructors stays valid.
  static auto* log = new std::shared_ptr<spdlog::logger>(make_logger());
  return **log;
}

}  // namespace kiln
