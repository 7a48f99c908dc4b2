// The process-wide compile cache: the one place every backend's graphs go
// through between canonical IR and executable bytes (graph/compiled_graph
// calls obtain()). Look up; on a miss take the key's lock, compile with the
// plugin, publish the entry. `kiln precompile` records requests in an
// Extraction (compiling nothing) and runs compile_into_cache() in its worker
// processes.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "compiler_cache/key.h"
#include "compiler_cache/lock.h"
#include "core/backend.h"

namespace kiln::compiler_cache {

struct CacheConfig {
  std::string dir;  // empty: no cache (every graph compiles)
  bool require_precompiled = false;
  bool retry_failed = false;
  LockPolicy lock;
};

struct CacheStats {
  int64_t hits = 0;            // executables loaded from the cache
  int64_t compiled = 0;        // compilations this process ran
  double lookup_seconds = 0;   // reading + verifying hits
  double compile_seconds = 0;  // compiling misses
  double seconds_saved = 0;    // the compile time the hits' entries recorded
};

// One compilation as the host asks for it.
struct CompileRequest {
  const Plugin* plugin = nullptr;
  int device_index = 0;
  std::string device_fingerprint;
  const std::vector<uint8_t>* ir = nullptr;
  nlohmann::json summary;  // graph/graph_summary.h: structure hash and port shapes, for messages
};

KeyParts key_parts_for(const CompileRequest& request);

// Sets the cache for this process. An unusable directory is a warning: the
// run goes on uncached (or read-only, when entries can be read but not
// written).
void configure(const CacheConfig& config);
const CacheConfig& config();
bool writable();
CacheStats stats();
// Appends what this process did since its last call (hits, compilations,
// seconds) to the cache's usage log (compiler_cache/usage_log.h) behind
// `kiln cache stats`. Nothing for no cache, a read-only one, or no change.
void record_usage();

// kiln precompile's extract mode, passed explicitly to the graphs it builds
// (graph::Executable, graph::CompiledGraph): each records its compile
// request here instead of compiling or loading.
struct ExtractedTask {
  std::string backend;
  int device_index = 0;
  std::vector<uint8_t> ir;
  KeyParts parts;
  std::string key;
  nlohmann::json summary;
};
class Extraction {
 public:
  void record(const CompileRequest& request);
  // Every request recorded so far, in order, duplicates included.
  std::vector<ExtractedTask> tasks() const;

 private:
  mutable std::mutex mutex_;
  std::vector<ExtractedTask> tasks_;
};

// Executable bytes for the request: from the cache, or compiled now (and
// stored). Throws kiln::Error for a compile
// error, a known-failed key (without retry_failed) and, with
// require_precompiled, any miss (naming the key part that differs from the
// nearest cached entry).
// `*hit` (when given) says whether the bytes came from a cache entry.
std::vector<uint8_t> obtain(const CompileRequest& request, bool* hit = nullptr);

// The plugin could not load the executable that obtain() took from a cache
// entry (`why`), though the entry passed its checksum: a plugin build that
// writes what it cannot read, or bytes damaged before they were summed.
// Like a corrupt entry, it is quarantined with a warning naming it, and the
// graph compiles again (stored anew); returns the new bytes. With
// --require-precompiled it throws kiln::Error naming the entry instead.
std::vector<uint8_t> replace_unloadable(const CompileRequest& request, const std::vector<uint8_t>& unloadable,
                                        const std::string& why);

// A precompile worker's job: make the entry for `request` exist. In a
// read-only cache it compiles without storing (Compiled: the unit compiles)
// and writes nothing. OutOfMemory: the plugin reported
// KILN_ERR_OUT_OF_MEMORY (no failure marker; may pass with fewer workers).
// Unsupported: the plugin refused the graph with KILN_ERR_UNSUPPORTED, so it
// runs on the cpu fallback (no entry, no failure marker, not a failure).
enum class Outcome { AlreadyCached, Compiled, Failed, FailedBefore, OutOfMemory, Unsupported };
Outcome compile_into_cache(const CompileRequest& request, std::string* message);

// The plugin's compile, nothing else. Throws CompileError.
// A PluginError, so callers still see the plugin's error code (an
// unsupported dtype is KILN_ERR_UNSUPPORTED).
struct CompileError : PluginError {
  CompileError(const std::string& what, bool deterministic, int32_t code = KILN_ERR_INTERNAL)
      : PluginError(what, code), deterministic(deterministic) {}
  // The plugin rejected the graph for good: a .failed marker records it.
  // Not for out of memory (may pass on a quieter machine) nor for
  // KILN_ERR_UNSUPPORTED (a capability gap: the executor runs the graph on
  // its fallback device instead, so nothing failed).
  bool deterministic;
};
// `options` is compile's JSON hints (docs/PLUGIN_GUIDE.md, "Compile options").
std::vector<uint8_t> compile_with_plugin(const Plugin& plugin, int device_index, const std::vector<uint8_t>& ir,
                                         const char* options = nullptr);

// The device fingerprint of device `index` without opening it.
std::string device_fingerprint(const Plugin& plugin, int index);

// Why `key` is not cached: the key parts that differ from the nearest entry
// in the cache at `dir` (one line).
std::string explain_miss(const std::string& dir, const KeyParts& parts, const std::string& key,
                         const nlohmann::json& summary);

}  // namespace kiln::compiler_cache
