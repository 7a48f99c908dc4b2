// Finds and loads backend plugins, and opens devices by --backend/--device.
//
// Search order: KILN_PLUGIN_PATH (colon-separated directories or .so files),
// then the running executable's directory, then <exe dir>/../lib/kiln (a
// relocated install), then the configured install plugin dir.
// Every candidate file gets a record: loaded, or skipped with a one-line
// reason (not a shared library, no kiln_plugin_get_api, ABI major mismatch,
// probe said no, duplicate backend name, ...). Nothing here aborts.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/backend.h"

namespace kiln {

struct PluginRecord {
  std::string path;
  bool loaded = false;
  std::string reason;  // why it was skipped; empty if loaded
  std::shared_ptr<const Plugin> plugin;
};

class Registry {
 public:
  // Scans the search path once and loads every valid plugin.
  static Registry& instance();

  const std::vector<PluginRecord>& records() const { return records_; }
  std::vector<std::shared_ptr<const Plugin>> plugins() const;
  // The loaded plugin with this backend name, or nullptr.
  std::shared_ptr<const Plugin> find(const std::string& backend) const;

  // Opens device `index` of `backend`. `backend` may also be a path to a
  // plugin .so. Throws kiln::Error naming what is missing and how to fix it.
  std::unique_ptr<Device> open(const std::string& backend, int index, int num_threads = 0);

  // Loads one file (also used for explicit paths). Never throws.
  PluginRecord load_file(const std::string& path);

  // The directories searched, in order (for diagnostics).
  std::vector<std::string> search_path() const;

 private:
  Registry();
  std::vector<PluginRecord> records_;
};

}  // namespace kiln
