#include "cli/cache_load_check.h"

#include <nlohmann/json.hpp>

#include "compiler_cache/key.h"
#include "core/error.h"
#include "core/registry.h"

namespace kiln::cli {

Device* LoadChecker::device_for(const std::string& backend, const std::string& plugin_binary,
                                const std::string& fingerprint, std::string* why) {
  const std::string id = backend + '\n' + plugin_binary + '\n' + fingerprint;
  if (auto d = devices_.find(id); d != devices_.end()) return d->second.get();
  if (auto u = unavailable_.find(id); u != unavailable_.end()) {
    *why = u->second;
    return nullptr;
  }
  std::string reason;
  try {
    std::shared_ptr<const Plugin> plugin = Registry::instance().find(backend);
    if (!plugin) {
      reason = "no " + backend + " plugin on the plugin path";
    } else if (plugin->binary_identity() != plugin_binary) {
      reason = "made by another build of the " + backend + " plugin";
    } else {
      const DeviceCount n = plugin->device_count();
      for (int i = 0; i < n.count; ++i)
        if (plugin->device_properties(i).fingerprint == fingerprint) {
          auto device = std::make_unique<Device>(plugin, i, 1);
          Device* d = device.get();
          devices_.emplace(id, std::move(device));
          return d;
        }
      reason = "no " + backend + " device here has its fingerprint";
    }
  } catch (const Error& e) {
    reason = std::string("the ") + backend + " plugin cannot be opened: " + e.what();
  }
  unavailable_.emplace(id, reason);
  *why = reason;
  return nullptr;
}

LoadChecker::Result LoadChecker::check(const compiler_cache::Entry& entry, std::string* why) {
  compiler_cache::KeyParts parts;
  try {
    parts = compiler_cache::key_parts_from_json(nlohmann::json::parse(entry.metadata).at("key_parts"));
  } catch (const nlohmann::json::exception&) {
    *why = "its metadata names no plugin";
    return Result::NotChecked;
  }
  Device* device = device_for(parts.backend, parts.plugin_binary, parts.device_fingerprint, why);
  if (device == nullptr) return Result::NotChecked;
  try {
    kiln_loaded_executable* loaded = device->plugin().load(device->handle(), entry.executable);
    device->plugin().loaded_free(device->handle(), loaded);
  } catch (const PluginError& e) {
    // Out of memory is the device's state now, not the entry's.
    if (e.code == KILN_ERR_OUT_OF_MEMORY) {
      *why = std::string("the device ran out of memory loading it: ") + e.what();
      return Result::NotChecked;
    }
    *why = std::string("the ") + parts.backend + " plugin cannot load it: " + e.what();
    return Result::NotLoadable;
  }
  return Result::Loaded;
}

}  // namespace kiln::cli
