// Logging through spdlog. The level comes from KILN_LOG_LEVEL
// (trace|debug|info|warn|error|off; default info); output goes to stderr so
// stdout stays clean for Megatron-format training lines and command output.
#pragma once

#include <spdlog/spdlog.h>

namespace kiln {

spdlog::logger& logger();

}  // namespace kiln
