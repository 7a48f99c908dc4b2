#include "compiler_cache/compile_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <mutex>

#include "compiler_cache/driver_caches.h"
#include "compiler_cache/store.h"
#include "compiler_cache/usage_log.h"
#include "core/hash.h"
#include "core/log.h"

namespace kiln::compiler_cache {
namespace {

using Clock = std::chrono::steady_clock;

// What precompile tells the plugin: nothing runs this executable in this
// process, so a driver that compiles at the first dispatch may be made to
// do it now (docs/PLUGIN_GUIDE.md, "Compile options"). A compile on a miss
// in training passes no options: its first step is that dispatch.
constexpr const char* kAheadOfTime = R"({"ahead_of_time":true})";

struct State {
  std::mutex mutex;
  CacheConfig config;
  bool writable = false;
  CacheStats stats;
  CacheStats recorded;  // what record_usage() has logged already
};

State& state() {
  static State s;
  return s;
}

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

bool exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

nlohmann::json entry_metadata(const KeyParts& parts, const CompileRequest& r, double compile_seconds,
                              size_t executable_bytes) {
  return {{"key_parts", key_parts_json(parts)},
          {"summary", r.summary},
          {"compile_seconds", compile_seconds},
          {"created_unix", static_cast<int64_t>(std::time(nullptr))},
          {"host", this_host()},
          {"ir_bytes", r.ir->size()},
          {"executable_bytes", executable_bytes}};
}

// Compiles, publishes (best effort: an unwritable cache only warns) and
// clears an old failure marker. Writes a marker for a deterministic error.
// A failed publish's reason goes to *store_error when given (precompile
// reports it per unit), else to a warning.
std::vector<uint8_t> compile_and_publish(const Store* store, const KeyParts& parts, const std::string& key,
                                         const CompileRequest& r, std::string* store_error = nullptr,
                                         const char* options = nullptr) {
  auto t0 = Clock::now();
  std::vector<uint8_t> exe;
  try {
    exe = compile_with_plugin(*r.plugin, r.device_index, *r.ir, options);
  } catch (const CompileError& e) {
    if (store && e.deterministic) {
      try {
        store->write_failed(parts, key, std::string(e.what()) + "\n");
      } catch (const Error& w) {
        logger().warn("compile cache: cannot record the failure of {}: {}", key, w.what());
      }
    }
    throw;
  }
  const double seconds = since(t0);
  {
    std::lock_guard<std::mutex> lock(state().mutex);
    ++state().stats.compiled;
    state().stats.compile_seconds += seconds;
  }
  if (store) {
    Entry entry{key, *r.ir, exe, entry_metadata(parts, r, seconds, exe.size()).dump()};
    try {
      store->publish(parts, entry);
      ::unlink(store->failed_path(parts, key).c_str());
    } catch (const Error& e) {
      if (store_error != nullptr)
        *store_error = e.what();
      else
        logger().warn("compile cache: cannot store {}: {}; going on uncached", key, e.what());
    }
  }
  return exe;
}

std::optional<std::vector<uint8_t>> lookup(const Store& store, const KeyParts& parts, const std::string& key) {
  auto t0 = Clock::now();
  const std::string path = store.entry_path(parts, key);
  std::optional<Entry> e = store.read(path, key);
  if (!e) return std::nullopt;
  // Last use, for `kiln cache gc` (best effort); a read-only cache is not
  // written to at all, not even its times.
  if (writable()) ::utimensat(AT_FDCWD, path.c_str(), nullptr, 0);
  double saved = 0;
  try {
    saved = nlohmann::json::parse(e->metadata).value("compile_seconds", 0.0);
  } catch (const nlohmann::json::exception&) {
    // Verified entries hold valid metadata; an odd field only costs the figure.
  }
  std::lock_guard<std::mutex> lock(state().mutex);
  ++state().stats.hits;
  state().stats.seconds_saved += saved;
  state().stats.lookup_seconds += since(t0);
  return std::move(e->executable);
}

// The newest quarantined copy of `key`'s entry, or "".
std::string quarantined_entry(const Store& store, const std::string& key) {
  std::string newest;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(store.quarantine_dir(), ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(key + ".entry.", 0) == 0 && is_quarantine_file_name(name) && !name.ends_with(".why") &&
        e.path().string() > newest)
      newest = e.path().string();
  }
  return newest;
}

std::string failed_message(const Store& store, const KeyParts& parts, const std::string& key, const std::string& log) {
  std::string first = log.substr(0, log.find('\n'));
  return "compiling graph " + key.substr(0, 16) + " failed before (" + first + "; marker " +
         store.failed_path(parts, key) + "); pass --retry-failed to try again";
}

}  // namespace

KeyParts key_parts_for(const CompileRequest& r) {
  KeyParts p;
  p.backend = r.plugin->name;
  p.compiler_version = r.plugin->compiler_version();
  p.plugin_binary = r.plugin->binary_identity();
  p.device_fingerprint = r.device_fingerprint;
  p.options = "{}";  // the host passes no codegen options yet (kiln_compile_args.options = NULL)
  p.ir_hash = sha256_hex(r.ir->data(), r.ir->size());
  return p;
}

void configure(const CacheConfig& config) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.config = config;
  s.writable = false;
  if (config.dir.empty()) return;
  Store store(config.dir);
  std::string why = store.check_writable();
  if (why.empty()) {
    s.writable = true;
    point_driver_caches(config.dir);
    return;
  }
  struct stat st {};
  if (::stat((config.dir + "/v1").c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    logger().warn("compile cache {} is not writable ({}); reading it only, new compilations are not stored", config.dir,
                  why);
  } else {
    logger().warn("compile cache {} is not usable ({}); running uncached", config.dir, why);
    s.config.dir.clear();
  }
}

const CacheConfig& config() { return state().config; }
bool writable() { return state().writable; }

CacheStats stats() {
  std::lock_guard<std::mutex> lock(state().mutex);
  return state().stats;
}

void record_usage() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.config.dir.empty() || !s.writable) return;
  UsageRecord r;
  r.hits = s.stats.hits - s.recorded.hits;
  r.misses = s.stats.compiled - s.recorded.compiled;
  r.seconds_saved = s.stats.seconds_saved - s.recorded.seconds_saved;
  r.compile_seconds = s.stats.compile_seconds - s.recorded.compile_seconds;
  if (r.empty()) return;
  if (append_usage(s.config.dir, r)) s.recorded = s.stats;
}

void Extraction::record(const CompileRequest& r) {
  const KeyParts parts = key_parts_for(r);
  std::string key = compute_key(parts);
  std::lock_guard<std::mutex> lock(mutex_);
  tasks_.push_back({r.plugin->name, r.device_index, *r.ir, parts, std::move(key), r.summary});
}

std::vector<ExtractedTask> Extraction::tasks() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return tasks_;
}

std::vector<uint8_t> obtain(const CompileRequest& r, bool* hit) {
  if (hit != nullptr) *hit = false;
  const KeyParts parts = key_parts_for(r);
  const std::string key = compute_key(parts);
  const CacheConfig& cfg = config();
  if (cfg.dir.empty()) {
    if (cfg.require_precompiled)
      throw Error("--require-precompiled: the compile cache is not usable, so graph " + key.substr(0, 16) +
                  " would compile; fix --cache-dir");
    return compile_and_publish(nullptr, parts, key, r);
  }
  Store store(cfg.dir);
  if (auto exe = lookup(store, parts, key)) {
    if (hit != nullptr) *hit = true;
    return std::move(*exe);
  }
  if (cfg.require_precompiled) {
    // Its own entry may have been there and found corrupt: comparing with the
    // nearest other entry would then blame a different model.
    if (const std::string q = quarantined_entry(store, key); !q.empty())
      throw Error("--require-precompiled: graph " + key.substr(0, 16) + "'s cache entry was corrupt and is now " + q +
                  "; run kiln precompile with the same arguments to rebuild it");
    throw Error("--require-precompiled: graph " + key.substr(0, 16) + " is not in the compile cache " + cfg.dir + ": " +
                explain_miss(cfg.dir, parts, key, r.summary) +
                "; run kiln precompile with the same arguments (and --world-size N for an N-rank job)");
  }
  if (!cfg.retry_failed)
    if (std::optional<std::string> log = store.read_failed(parts, key))
      throw Error(failed_message(store, parts, key, *log));
  if (!writable()) return compile_and_publish(nullptr, parts, key, r);

  // Another process may be compiling this key: wait for it rather than
  // duplicate the work, then take what it published.
  const std::string entry_path = store.entry_path(parts, key);
  std::error_code ec;
  std::filesystem::create_directories(store.entry_dir(parts, key), ec);
  std::unique_ptr<Lock> held = Lock::acquire(store.lock_path(parts, key), cfg.lock, [&] { return exists(entry_path); });
  if (auto exe = lookup(store, parts, key)) {
    if (hit != nullptr) *hit = true;
    return std::move(*exe);
  }
  return compile_and_publish(&store, parts, key, r);
}

std::vector<uint8_t> replace_unloadable(const CompileRequest& r, const std::vector<uint8_t>& unloadable,
                                        const std::string& why) {
  const KeyParts parts = key_parts_for(r);
  const std::string key = compute_key(parts);
  const CacheConfig& cfg = config();
  Store store(cfg.dir);
  const std::string entry_path = store.entry_path(parts, key);
  const std::string reason = "the " + r.plugin->name + " plugin cannot load its executable: " + why;
  if (!writable()) {
    if (cfg.require_precompiled)
      throw Error("--require-precompiled: compile cache entry " + entry_path + " passes its checksum but " + reason +
                  "; run kiln precompile with the same arguments in a writable cache");
    logger().warn(
        "compile cache entry {} passes its checksum but {}; compiling the graph again (the cache is "
        "read-only, so the entry stays)",
        entry_path, reason);
    return compile_and_publish(nullptr, parts, key, r);
  }
  std::unique_ptr<Lock> held = Lock::acquire(store.lock_path(parts, key), cfg.lock, [&] { return exists(entry_path); });
  // Another process may have replaced it meanwhile: take a different entry.
  if (std::optional<Entry> e = store.read(entry_path, key); e && e->executable != unloadable)
    return std::move(e->executable);
  const std::string moved = store.quarantine(entry_path, reason);
  const std::string where = moved.empty() ? "it could not be moved aside" : "moved to " + moved;
  if (cfg.require_precompiled)
    throw Error("--require-precompiled: compile cache entry " + entry_path + " passes its checksum but " + reason +
                " (" + where + "); run kiln precompile with the same arguments to rebuild it");
  logger().warn("compile cache entry {} passes its checksum but {}; {}, compiling the graph again", entry_path, reason,
                where);
  return compile_and_publish(&store, parts, key, r);
}

Outcome compile_into_cache(const CompileRequest& r, std::string* message) {
  const KeyParts parts = key_parts_for(r);
  const std::string key = compute_key(parts);
  const CacheConfig& cfg = config();
  if (cfg.dir.empty()) {
    *message = "the compile cache is not usable";
    return Outcome::Failed;
  }
  Store store(cfg.dir);
  const std::string entry_path = store.entry_path(parts, key);
  if (store.read(entry_path, key)) return Outcome::AlreadyCached;
  if (!cfg.retry_failed)
    if (std::optional<std::string> log = store.read_failed(parts, key)) {
      *message = failed_message(store, parts, key, *log);
      return Outcome::FailedBefore;
    }
  if (!writable()) {
    // Read-only: no lock, no entry, no marker; only whether it compiles.
    try {
      compile_and_publish(nullptr, parts, key, r, nullptr, kAheadOfTime);
    } catch (const CompileError& e) {
      *message = e.what();
      return e.code == KILN_ERR_OUT_OF_MEMORY ? Outcome::OutOfMemory : Outcome::Failed;
    }
    return Outcome::Compiled;
  }
  std::error_code ec;
  std::filesystem::create_directories(store.entry_dir(parts, key), ec);
  std::unique_ptr<Lock> held = Lock::acquire(store.lock_path(parts, key), cfg.lock, [&] { return exists(entry_path); });
  if (store.read(entry_path, key)) return Outcome::AlreadyCached;
  std::string store_error;
  try {
    compile_and_publish(&store, parts, key, r, &store_error, kAheadOfTime);
  } catch (const CompileError& e) {
    *message = e.what();
    if (e.code == KILN_ERR_UNSUPPORTED) return Outcome::Unsupported;
    return e.code == KILN_ERR_OUT_OF_MEMORY ? Outcome::OutOfMemory : Outcome::Failed;
  }
  if (!store_error.empty() || !exists(entry_path)) {
    // The reason (a full disk, a size limit), as kiln train's warning says it.
    *message = "compiled, but the entry could not be stored" + (store_error.empty() ? "" : ": " + store_error);
    return Outcome::Failed;
  }
  return Outcome::Compiled;
}

std::vector<uint8_t> compile_with_plugin(const Plugin& plugin, int device_index, const std::vector<uint8_t>& ir,
                                         const char* options) {
  try {
    return plugin.compile(ir, device_index, options);
  } catch (const PluginError& e) {
    // Out of memory may pass on a quieter machine, and an unsupported graph
    // runs on the fallback device: no failure marker for either.
    throw CompileError(e.what(), e.code != KILN_ERR_OUT_OF_MEMORY && e.code != KILN_ERR_UNSUPPORTED, e.code);
  }
}

std::string device_fingerprint(const Plugin& plugin, int index) { return plugin.device_properties(index).fingerprint; }

}  // namespace kiln::compiler_cache
