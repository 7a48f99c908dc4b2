// Finds and loads backend plugins, and opens devices by --backend/--device.
//
// Search order: KILN_PLUGIN_PATH (colon-separated directories or .so files),
// then the running executable's directory, then <exe dir>/../lib/kiln (a
// relocated install), then the configured install plugin dir.
// The search path is listed once, without loading anything. A plugin file is
// dlopened only when its backend is asked for (--backend cpu opens only
// libkiln-backend-cpu.so), or when every record is asked for (kiln devices).
// Every file loaded gets a record: loaded, or skipped with a one-line reason
// (not a regular file, not a shared library, no kiln_plugin_get_api, ABI
// major mismatch, probe said no, duplicate backend name, ended the process
// while loading, ...). Nothing here aborts or hangs.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
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
  // Lists the search path once; loads nothing yet.
  static Registry& instance();

  // Every plugin file on the search path, each loaded first (each in a child
  // process first, so that one that crashes or exits is only reported).
  // Records are only ever appended, so the reference stays valid.
  const std::vector<PluginRecord>& records();
  std::vector<std::shared_ptr<const Plugin>> plugins();
  // The plugin with this backend name: the first file on the search path
  // named libkiln-backend-<backend>.so whose table names that backend, or
  // nullptr. A first file that cannot load is never replaced by a later one.
  std::shared_ptr<const Plugin> find(const std::string& backend);
  // Every file on the search path named for `backend`, in search order
  // (the first is the one --backend uses).
  std::vector<std::string> files_named_for(const std::string& backend) const;

  // Opens device `index` of `backend`. `backend` may also be a path to a
  // plugin .so. Throws kiln::Error naming what is missing and how to fix it.
  std::unique_ptr<Device> open(const std::string& backend, int index, int num_threads = 0);

  // Loads one file (also used for explicit paths). Never throws. A plugin
  // that ends the process while loading is reported in one line, exit 1.
  PluginRecord load_file(const std::string& path);

  // The directories searched, in order (for diagnostics).
  std::vector<std::string> search_path() const;

 private:
  Registry();
  void load_all();
  std::shared_ptr<const Plugin> loaded(const std::string& backend) const;
  PluginRecord load_file(const std::string& path, bool probe_in_child);

  std::vector<std::string> candidates_;  // plugin files in search order
  // Backend name from the file name ("cpu" for libkiln-backend-cpu.so) to
  // its files in search order: a lookup touches only its own files.
  std::unordered_map<std::string, std::vector<std::string>> candidates_by_backend_;
  bool all_loaded_ = false;
  std::vector<PluginRecord> records_;
  std::unordered_map<std::string, size_t> record_by_real_path_;
  // Threads may open devices at once (a test's ranks, a compile pool). Loads
  // go one at a time: the records above, and the process-wide exit and crash
  // hooks a load runs under (core/plugin_load_guard.h), are shared.
  // Recursive because open() and find() reach the other public methods.
  mutable std::recursive_mutex mutex_;
};

}  // namespace kiln
