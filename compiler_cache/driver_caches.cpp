#include "compiler_cache/driver_caches.h"

#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "core/log.h"

namespace kiln::compiler_cache {
namespace {

struct DriverCache {
  const char* variable;  // what the driver reads
  const char* subdir;    // under <dir>/drivers
};

// Mesa reads MESA_SHADER_CACHE_DIR when a driver opens its screen and keeps
// its files in <it>/mesa_shader_cache; MESA_SHADER_CACHE_DISABLE still
// turns it off.
constexpr DriverCache kDriverCaches[] = {
    {"MESA_SHADER_CACHE_DIR", "mesa"},
};

}  // namespace

std::string driver_caches_dir(const std::string& dir) { return dir + "/drivers"; }

void point_driver_caches(const std::string& dir) {
  for (const DriverCache& c : kDriverCaches) {
    const char* set = std::getenv(c.variable);
    if (set != nullptr && *set != '\0') continue;
    const std::string path = driver_caches_dir(dir) + "/" + c.subdir;
    std::error_code ec;
    std::filesystem::create_directories(path, ec);
    if (ec) {
      logger().warn("compile cache: cannot create {} ({}); {} is left unset", path, ec.message(), c.variable);
      continue;
    }
    // Before any thread reads the environment: configure() runs at startup.
    ::setenv(c.variable, path.c_str(), 0);
  }
}

}  // namespace kiln::compiler_cache
