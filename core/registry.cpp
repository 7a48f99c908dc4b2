#include "core/registry.h"

#include <dlfcn.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <system_error>

#include "core/log.h"
#include "core/plugin_identity.h"
#include "core/plugin_load_guard.h"
#include "core/regular_file.h"

namespace fs = std::filesystem;

namespace kiln {
namespace {

constexpr const char* kPrefix = "libkiln-backend-";
constexpr const char* kSuffix = ".so";

bool is_candidate_name(const std::string& name) {
  return name.size() > std::char_traits<char>::length(kPrefix) + 3 && name.starts_with(kPrefix) &&
         name.ends_with(kSuffix);
}

struct RequiredFn {
  size_t offset;
  size_t size;
  const char* name;
};

#define KILN_REQUIRED(f) \
  RequiredFn { offsetof(kiln_plugin_api, f), sizeof(kiln_plugin_api::f), #f }
// Everything a backend needs to list devices, move data and run a graph.
// buffer_copy and op_supported may be NULL; callers check Plugin::has().
constexpr RequiredFn kRequired[] = {
    KILN_REQUIRED(error_destroy), KILN_REQUIRED(error_message),
    KILN_REQUIRED(error_code),    KILN_REQUIRED(compiler_version),
    KILN_REQUIRED(device_count),  KILN_REQUIRED(device_properties),
    KILN_REQUIRED(device_open),   KILN_REQUIRED(device_close),
    KILN_REQUIRED(buffer_alloc),  KILN_REQUIRED(buffer_free),
    KILN_REQUIRED(buffer_write),  KILN_REQUIRED(buffer_read),
    KILN_REQUIRED(compile),       KILN_REQUIRED(executable_bytes_free),
    KILN_REQUIRED(load),          KILN_REQUIRED(loaded_free),
    KILN_REQUIRED(execute),       KILN_REQUIRED(synchronize),
};
#undef KILN_REQUIRED

std::string real_path(const std::string& path) {
  std::error_code ec;
  fs::path p = fs::canonical(path, ec);
  return ec ? fs::absolute(path, ec).lexically_normal().string() : p.string();
}

std::string exe_dir() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : exe.parent_path().string();
}

std::string dir_of(const std::string& path) {
  const std::string dir = fs::path(path).parent_path().string();
  return dir.empty() ? "." : dir;
}

std::string one_line(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s;
}

// Everything up to the ABI checks; returns the reason on failure.
std::string validate(const std::string& path, void* handle, std::shared_ptr<Plugin>& plugin) {
  dlerror();
  void* sym = dlsym(handle, KILN_PLUGIN_GET_API_SYMBOL);
  if (sym == nullptr) return "no kiln_plugin_get_api symbol; not a kiln plugin";
  auto get_api = reinterpret_cast<kiln_plugin_get_api_fn>(sym);
  const kiln_plugin_api* api = get_api();
  if (api == nullptr) return "kiln_plugin_get_api returned NULL";

  // Read struct_size before anything else: a table too short to hold the
  // name cannot be trusted for any other field either.
  constexpr size_t min_size = offsetof(kiln_plugin_api, name) + sizeof(char*);
  if (api->struct_size < min_size) {
    return fmt::format("plugin table is {} bytes, smaller than the {}-byte header; corrupt plugin", api->struct_size,
                       min_size);
  }
  if (api->abi_major != KILN_ABI_MAJOR) {
    return fmt::format(
        "built for kiln plugin ABI {}.{}, this kiln speaks {}.{}; rebuild the plugin against "
        "this kiln's plugin.h",
        api->abi_major, api->abi_minor, KILN_ABI_MAJOR, KILN_ABI_MINOR);
  }
  if (api->name == nullptr || api->name[0] == '\0') return "plugin table has no backend name";

  const size_t api_size = std::min(api->struct_size, sizeof(kiln_plugin_api));

  std::string missing;
  for (const RequiredFn& fn : kRequired) {
    bool present = fn.offset + fn.size <= api_size &&
                   *reinterpret_cast<void* const*>(reinterpret_cast<const char*>(api) + fn.offset);
    if (!present) missing += (missing.empty() ? "" : ", ") + std::string(fn.name);
  }
  if (!missing.empty()) return "plugin table lacks required functions: " + missing;

  if (void* probe_sym = dlsym(handle, KILN_PLUGIN_PROBE_SYMBOL)) {
    char reason[512] = {};
    auto probe = reinterpret_cast<kiln_plugin_probe_fn>(probe_sym);
    if (probe(reason, sizeof(reason)) == 0) {
      reason[sizeof(reason) - 1] = '\0';
      return fmt::format("plugin probe says this machine cannot run it: {}", reason[0] ? reason : "no reason given");
    }
  }
  // Read now, while the file is the one just loaded: a plugin rebuilt while
  // this process runs must not lend its new identity to the old code.
  std::string identity;
  try {
    identity = plugin_binary_identity(path);
  } catch (const Error& e) {
    return e.what();
  }
  plugin = std::make_shared<Plugin>(api->name, path, api, api_size, std::move(identity));
  return {};
}

// The backend a file's name promises ("mydev" for libkiln-backend-mydev.so),
// or "" for a name outside that pattern.
std::string backend_of_file_name(const std::string& path) {
  const std::string name = fs::path(path).filename().string();
  if (!is_candidate_name(name)) return {};
  const size_t prefix = std::char_traits<char>::length(kPrefix), suffix = std::char_traits<char>::length(kSuffix);
  return name.substr(prefix, name.size() - prefix - suffix);
}

// A file whose name and table disagree loads under the table's name, so
// --backend <file name's backend> would not find it: say so once, at load.
void warn_if_misnamed(const std::string& path, const std::string& table_name) {
  const std::string named = backend_of_file_name(path);
  if (named.empty() || named == table_name) return;
  logger().warn(
      "plugin {}: its file name says backend '{}' but its table says '{}'; it loads as '{}' (rename the file to "
      "{}{}{} or change the name in its kiln_plugin_api table)",
      path, named, table_name, table_name, kPrefix, table_name, kSuffix);
}

}  // namespace

Registry& Registry::instance() {
  static Registry registry;
  return registry;
}

Registry::Registry() {
  for (const std::string& entry : search_path()) {
    std::error_code ec;
    if (fs::is_directory(entry, ec)) {
      std::vector<std::string> files;
      for (const auto& f : fs::directory_iterator(entry, ec)) {
        if (is_candidate_name(f.path().filename().string())) files.push_back(f.path().string());
      }
      // Sorted so that which duplicate wins does not depend on the filesystem.
      std::sort(files.begin(), files.end());
      candidates_.insert(candidates_.end(), files.begin(), files.end());
    } else if (fs::exists(entry, ec)) {
      candidates_.push_back(entry);
    } else {
      logger().debug("plugin search: {} does not exist", entry);
    }
  }
  for (const std::string& file : candidates_) {
    if (const std::string backend = backend_of_file_name(file); !backend.empty())
      candidates_by_backend_[backend].push_back(file);
  }
}

void Registry::load_all() {
  if (all_loaded_) return;
  all_loaded_ = true;
  for (const std::string& file : candidates_) load_file(file, /*probe_in_child=*/true);
}

const std::vector<PluginRecord>& Registry::records() {
  const std::lock_guard lock(mutex_);
  load_all();
  return records_;
}

std::vector<std::string> Registry::search_path() const {
  std::vector<std::string> dirs;
  auto add = [&](const std::string& d) {
    if (d.empty()) return;
    for (const std::string& seen : dirs) {
      const std::string a = real_path(seen), b = real_path(d);
      if (a.empty() || b.empty() ? seen == d : a == b) return;
    }
    dirs.push_back(d);
  };
  if (const char* env = std::getenv("KILN_PLUGIN_PATH")) {
    std::string s = env;
    size_t start = 0;
    while (start <= s.size()) {
      size_t end = s.find(':', start);
      if (end == std::string::npos) end = s.size();
      add(s.substr(start, end - start));
      start = end + 1;
    }
  }
  add(exe_dir());
  // A relocated install (cmake --install --prefix P) keeps plugins in
  // P/lib/kiln beside P/bin/kiln, whatever prefix the build was configured for.
  if (!exe_dir().empty()) add((std::filesystem::path(exe_dir()) / ".." / "lib" / "kiln").lexically_normal().string());
#ifdef KILN_INSTALL_PLUGIN_DIR
  add(KILN_INSTALL_PLUGIN_DIR);
#endif
  return dirs;
}

PluginRecord Registry::load_file(const std::string& path) {
  const std::lock_guard lock(mutex_);
  return load_file(path, /*probe_in_child=*/false);
}

PluginRecord Registry::load_file(const std::string& path, bool probe_in_child) {
  const std::string real = real_path(path);
  if (auto it = record_by_real_path_.find(real); it != record_by_real_path_.end()) return records_[it->second];

  PluginRecord record;
  record.path = path;
  auto finish = [&](std::string reason) {
    record.reason = one_line(std::move(reason));
    if (record.loaded) {
      logger().debug("plugin {}: loaded backend '{}' (ABI {}.{})", path, record.plugin->name,
                     record.plugin->abi_major(), record.plugin->abi_minor());
    } else {
      logger().debug("plugin {}: skipped: {}", path, record.reason);
    }
    record_by_real_path_.emplace(real, records_.size());
    records_.push_back(record);
    return record;
  };

  std::error_code ec;
  // exists() reports an error other than "not found" (a symbolic link loop,
  // a directory that cannot be searched) through ec: that is the reason to
  // show, not "no such file".
  if (!fs::exists(path, ec)) {
    if (!ec) return finish("no such file");
    if (ec == std::errc::too_many_symbolic_link_levels)
      return finish("a symbolic link loop (" + ec.message() + "); fix or remove the link in " + dir_of(path));
    return finish("cannot be read (" + ec.message() + "); fix its permissions or remove it from " + dir_of(path));
  }
  if (fs::is_directory(path, ec)) return finish("is a directory, not a plugin file");

  // dlopen of a FIFO blocks until a writer appears: only regular files go on.
  bool elf = false;
  {
    RegularFile file = open_regular_file(path, std::numeric_limits<uint64_t>::max());
    if (file.fd < 0) return finish(file.problem + "; remove it from " + dir_of(path));
    char magic[4] = {};
    elf = ::pread(file.fd, magic, sizeof(magic), 0) == sizeof(magic) && std::memcmp(magic,
                                                                                    "\x7f"
                                                                                    "ELF",
                                                                                    4) == 0;
    ::close(file.fd);
  }

  // A path without a slash would make dlopen search the library path.
  const std::string abs = fs::absolute(path, ec).string();
  std::shared_ptr<Plugin> plugin;
  std::string reason;
  auto open_and_validate = [&] {
    dlerror();
    // Skipped libraries are never dlclosed: a half-initialised foreign library
    // can crash in its destructors, and keeping it mapped costs nothing.
    void* handle = dlopen(abs.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      const char* dl = dlerror();
      std::string err = dl ? dl : "";
      // dlerror repeats the path; the record already carries it.
      if (err.starts_with(abs + ": ")) err.erase(0, abs.size() + 2);
      reason = "not a loadable shared library: " + (err.empty() ? "dlopen failed" : err);
      return;
    }
    reason = validate(path, handle, plugin);
  };
  // Only an ELF file can run code when dlopened; the rest need no child.
  if (probe_in_child && elf) {
    const std::string ended = probe_load_in_child(open_and_validate);
    if (!ended.empty()) return finish(ended + "; remove it from " + dir_of(path));
  }
  run_guarded_load(path, open_and_validate);
  if (!reason.empty()) return finish(reason);

  if (auto existing = loaded(plugin->name)) {
    return finish(fmt::format("backend '{}' already loaded from {}", plugin->name, existing->path));
  }
  warn_if_misnamed(path, plugin->name);
  record.loaded = true;
  record.plugin = std::move(plugin);
  return finish({});
}

std::vector<std::shared_ptr<const Plugin>> Registry::plugins() {
  const std::lock_guard lock(mutex_);
  load_all();
  std::vector<std::shared_ptr<const Plugin>> out;
  for (const PluginRecord& r : records_) {
    if (r.loaded) out.push_back(r.plugin);
  }
  return out;
}

std::shared_ptr<const Plugin> Registry::loaded(const std::string& backend) const {
  for (const PluginRecord& r : records_) {
    if (r.loaded && r.plugin->name == backend) return r.plugin;
  }
  return nullptr;
}

// The first file on the path named for the backend is the one used. If it
// cannot load, the backend is not found (open() names that file and why):
// a later file never stands in for it, since the usual later file is an
// installed copy silently replacing the broken build its author is testing.
// A first file whose table names another backend does not claim this one,
// so the next file named for it is tried.
std::shared_ptr<const Plugin> Registry::find(const std::string& backend) {
  const std::lock_guard lock(mutex_);
  if (auto it = candidates_by_backend_.find(backend); it != candidates_by_backend_.end()) {
    for (const std::string& file : it->second) {
      const PluginRecord r = load_file(file);
      if (r.loaded && r.plugin->name == backend) return r.plugin;
      if (r.loaded) continue;
      // Refused as a second copy of a backend already loaded (by an
      // explicit path, say): that backend is the one in use.
      if (r.reason.rfind("backend '" + backend + "' already loaded from ", 0) == 0) return loaded(backend);
      return nullptr;
    }
  }
  // A plugin file may name its backend differently from its file name.
  load_all();
  return loaded(backend);
}

std::vector<std::string> Registry::files_named_for(const std::string& backend) const {
  auto it = candidates_by_backend_.find(backend);
  return it == candidates_by_backend_.end() ? std::vector<std::string>{} : it->second;
}

std::unique_ptr<Device> Registry::open(const std::string& backend, int index, int num_threads) {
  std::unique_lock lock(mutex_);
  std::shared_ptr<const Plugin> plugin;
  if (backend.find('/') != std::string::npos || backend.ends_with(kSuffix)) {
    PluginRecord r = load_file(backend);
    if (!r.loaded) throw Error(fmt::format("cannot use plugin {}: {}", backend, r.reason));
    plugin = r.plugin;
  } else {
    plugin = find(backend);
  }

  if (plugin == nullptr) {
    const std::string file = kPrefix + backend + kSuffix;
    for (const PluginRecord& r : records_) {
      if (!r.loaded && fs::path(r.path).filename() == file) {
        const std::vector<std::string> named = files_named_for(backend);
        const std::string later =
            named.size() > 1 ? fmt::format(" (kiln does not fall back to the later {})", named[1]) : "";
        throw Error(fmt::format("backend '{}' found at {} but not loaded: {}{}", backend, r.path, r.reason, later));
      }
    }
    // The file is on the path but its table names another backend: the
    // search path is fine, the names are not.
    for (const PluginRecord& r : records_) {
      if (r.loaded && fs::path(r.path).filename() == file) {
        throw Error(fmt::format(
            "no backend '{}': {} loads as backend '{}' (the name in its table); use --backend {} or rename the "
            "file to {}{}{}",
            backend, r.path, r.plugin->name, r.plugin->name, kPrefix, r.plugin->name, kSuffix));
      }
    }
    std::string names;
    for (const auto& p : plugins()) names += (names.empty() ? "" : ", ") + p->name;
    std::string dirs;
    for (const auto& d : search_path()) dirs += (dirs.empty() ? "" : ":") + d;
    // Every directory on the path was searched: the hint names none of them.
    throw Error(
        fmt::format("no backend '{}'; loaded backends: {}. Search path: {} (none holds a loadable {}: add the "
                    "directory holding it to KILN_PLUGIN_PATH, or pass --backend the .so file's path)",
                    backend, names.empty() ? "none" : names, dirs.empty() ? "(empty)" : dirs, file));
  }
  lock.unlock();  // opening the device is the plugin's own business
  return std::make_unique<Device>(plugin, index, num_threads);
}

}  // namespace kiln
