// `kiln devices`: what the loader found, and why anything was skipped.
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <system_error>
#include <utility>

#include "cli/commands.h"
#include "core/error.h"
#include "core/registry.h"

namespace kiln::cli {
namespace {

constexpr const char* kUsage =
    "usage: kiln devices\n"
    "\n"
    "Lists every loaded backend plugin and its devices, the plugin files that\n"
    "were skipped and why, and the plugin search path.\n"
    "\n"
    "Plugins (libkiln-backend-<name>.so) are searched in KILN_PLUGIN_PATH\n"
    "(colon-separated directories or files), the kiln executable's directory,\n"
    "and the install plugin directory.\n";

const char* kind_name(int32_t kind) {
  switch (kind) {
    case KILN_DEVICE_CPU: return "cpu";
    case KILN_DEVICE_GPU: return "gpu";
    case KILN_DEVICE_ACCELERATOR: return "accelerator";
    default: return "other";
  }
}

std::string or_unknown(const char* s) { return s != nullptr && s[0] != '\0' ? s : "unknown"; }

// kiln_device_properties.low_precision in words: what the hardware offers
// for 16-bit floats. Whether the backend trains in them is --bf16's check.
std::string low_precision_text(uint32_t bits) {
  static constexpr std::pair<uint32_t, const char*> kNames[] = {
      {KILN_LOWP_16BIT_STORAGE, "16-bit storage"},
      {KILN_LOWP_F16_CONVERT, "f16 conversion"},
      {KILN_LOWP_F16_ARITHMETIC, "f16 arithmetic"},
      {KILN_LOWP_BF16_ARITHMETIC, "bf16 arithmetic"},
  };
  std::string text;
  for (const auto& [bit, name] : kNames)
    if ((bits & bit) != 0) text += (text.empty() ? "" : ", ") + std::string(name);
  return text.empty() ? "none reported" : text;
}

// Properties need no opened device, so listing never allocates device state.
void print_devices(const Plugin& p) {
  const DeviceCount count = p.device_count();
  if (count.count <= 0) {
    if (!count.no_devices_reason.empty())
      fmt::print("  no devices: {}\n", count.no_devices_reason);
    else
      fmt::print("  no devices\n");
  }
  for (int32_t i = 0; i < count.count; ++i) {
    const kiln_device_properties props = p.device_properties(i);
    fmt::print(
        "  device {}: {} | vendor {} | kind {} | {:.1f} GiB | {} compute units | driver {} | "
        "fingerprint {}\n",
        i, or_unknown(props.name), or_unknown(props.vendor), kind_name(props.kind),
        static_cast<double>(props.memory_bytes) / (1024.0 * 1024.0 * 1024.0), props.compute_units,
        or_unknown(props.driver_version), or_unknown(props.fingerprint));
    fmt::print("    low precision: {}\n", low_precision_text(props.low_precision));
  }
}

// Every file on the path named for the backend, marking the one
// --backend uses (the first): when that one cannot load, the backend listed
// here from a later file is not what --backend gets.
void print_claimants(Registry& registry, const Plugin& p) {
  const std::vector<std::string> files = registry.files_named_for(p.name);
  if (files.size() < 2 && (files.empty() || files.front() == p.path)) return;
  for (size_t i = 0; i < files.size(); ++i) {
    std::string state = files[i] == p.path ? "loaded" : "";
    for (const PluginRecord& r : registry.records())
      if (r.path == files[i] && !r.loaded) state = "not loaded: " + r.reason;
    fmt::print("  file {}: {}{}\n", files[i], state.empty() ? "not loaded" : state,
               i == 0 ? (files[i] == p.path ? " (used by --backend " + p.name + ")"
                                            : " (--backend " + p.name + " uses this file, so it fails)")
                      : "");
  }
}

}  // namespace

int run_devices(const std::vector<std::string>& args) {
  for (const std::string& a : args) {
    if (a == "--help" || a == "-h") {
      fmt::print("{}", kUsage);
      return 0;
    }
    throw Error(fmt::format("devices: unexpected argument '{}'; see kiln devices --help", a));
  }

  Registry& registry = Registry::instance();
  const auto plugins = registry.plugins();
  if (plugins.empty()) fmt::print("No backends loaded.\n");
  for (const auto& p : plugins) {
    fmt::print("backend {}  (ABI {}.{}, compiler {})  {}\n", p->name, p->abi_major(), p->abi_minor(),
               or_unknown(p->compiler_version().c_str()), p->path);
    print_claimants(registry, *p);
    // One broken backend must not hide the others from the listing.
    try {
      print_devices(*p);
    } catch (const Error& e) {
      fmt::print("  error: {}\n", e.what());
    }
  }

  fmt::print("\nSkipped plugin files:");
  bool any = false;
  for (const PluginRecord& r : registry.records()) {
    if (r.loaded) continue;
    fmt::print("\n  {}: {}", r.path, r.reason);
    any = true;
  }
  fmt::print("{}\n", any ? "" : " none");

  fmt::print("\nSearch path:\n");
  for (const std::string& dir : registry.search_path()) {
    std::error_code ec;
    fmt::print("  {}{}\n", dir, std::filesystem::exists(dir, ec) ? "" : "  (does not exist)");
  }
  std::fflush(stdout);
  return 0;
}

}  // namespace kiln::cli
