// The compile cache on disk:
//
//   <root>/v1/<backend>-<compiler_version>/<device_fp>/<k0k1>/<key>.entry
//                                                            <key>.failed   (deterministic compile error + log)
//                                                            <key>.lock     (a compilation in progress)
//   <root>/quarantine/<key>.entry.<time>                     (entries that failed verification)
//
// Every read verifies the entry (checksum, key, IR hash); a corrupt one is
// moved to quarantine/ and reads as a miss. Every write is atomic
// (atomic_file.h), so concurrent writers of one key are harmless: the last
// rename wins and both wrote the same bytes' worth of meaning.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "compiler_cache/entry_format.h"
#include "compiler_cache/key.h"

namespace kiln::compiler_cache {

// --cache-dir's default: $KILN_CACHE_DIR, else $XDG_CACHE_HOME/kiln (an
// absolute one), else ~/.cache/kiln (an existing $HOME); else "" (no cache,
// with one warning saying so).
std::string default_cache_dir();

// Whether a decoded entry is what `expected_key` names: the key, the IR hash
// and the key recomputed from the stored parts all agree. Empty if so, else
// why not.
std::string verify_entry(const Entry& entry, const std::string& expected_key);

class Store {
 public:
  explicit Store(std::string root);
  const std::string& root() const { return root_; }

  std::string entry_dir(const KeyParts& parts, const std::string& key) const;
  std::string entry_path(const KeyParts& parts, const std::string& key) const;
  std::string failed_path(const KeyParts& parts, const std::string& key) const;
  std::string lock_path(const KeyParts& parts, const std::string& key) const;

  // Creates <root>/v1 and checks a file can be written there; empty if so,
  // else why not.
  std::string check_writable() const;

  // The verified entry at `path`, or nullopt (missing, or corrupt: then it
  // is quarantined with a warning).
  std::optional<Entry> read(const std::string& path, const std::string& key) const;
  // Atomically publishes `entry` (throws kiln::Error on I/O failure).
  void publish(const KeyParts& parts, const Entry& entry) const;
  // Moves a bad entry aside; returns where it went (empty if it could not).
  std::string quarantine(const std::string& path, const std::string& why) const;

  std::optional<std::string> read_failed(const KeyParts& parts, const std::string& key) const;
  void write_failed(const KeyParts& parts, const std::string& key, const std::string& log) const;

  // Every file under <root>/v1 whose name ends with `suffix` (".entry",
  // ".failed", ".lock", or "" for all), sorted.
  std::vector<std::string> files(const std::string& suffix) const;
  std::string quarantine_dir() const { return root_ + "/quarantine"; }

 private:
  std::string root_;
};

// Whether a file name is one the cache itself writes: under v1/, a 64-digit
// hex key with .entry, .failed or .lock (and their .tmp.* and .stale.*
// temporaries) or the .write-probe; under quarantine/, <key>.entry.<time>.<pid>
// and its .why note. `kiln cache clear` deletes only these, so a mistaken
// --cache-dir cannot take the user's files with it.
bool is_cache_file_name(const std::string& filename);
bool is_quarantine_file_name(const std::string& filename);

// The key of an entry path ("<dir>/<key>.entry" -> key).
std::string key_of_path(const std::string& path);

}  // namespace kiln::compiler_cache
