// `kiln cache ls | stats | verify [--fix] | clear [--failed|--locks|--all] |
//  gc [--max-size N] [--max-age T] | explain KEY`: inspecting and
// maintaining the compile cache (docs/CACHE.md).
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <string>
#include <vector>

#include "cli/cache_load_check.h"
#include "cli/commands.h"
#include "compiler_cache/atomic_file.h"
#include "compiler_cache/evict.h"
#include "compiler_cache/lock.h"
#include "compiler_cache/store.h"
#include "compiler_cache/usage_log.h"
#include "core/error.h"
#include "trainer/flags.h"

namespace kiln::cli {
namespace {

namespace fs = std::filesystem;

const char* kCacheUsage =
    "usage: kiln cache <ls|stats|verify|clear|gc|explain> [flags]\n"
    "  ls                         list entries, failure markers and locks\n"
    "  stats                      hits, misses and compile time saved, over every process that used the cache\n"
    "  verify [--fix]             checksum every entry and load it through its plugin; --fix quarantines bad ones, "
    "removes stale locks\n"
    "  clear [--failed|--locks|--all]  remove failure markers, locks, or everything (default: --all)\n"
    "  gc [--max-size S] [--max-age T]  drop least recently used entries above S (e.g. 2G) or older than T (e.g. 7d)\n"
    "  explain KEY                show an entry's key parts, graph, sizes and state (KEY may be a prefix)\n"
    "every subcommand takes --cache-dir DIR (default: $KILN_CACHE_DIR, $XDG_CACHE_HOME/kiln, ~/.cache/kiln)\n";

struct FileInfo {
  std::string path;
  uint64_t bytes = 0;
  double age_s = 0;  // since last modification (the last use, for entries)
};

FileInfo info(const std::string& path) {
  FileInfo f{path};
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    f.bytes = static_cast<uint64_t>(st.st_size);
    f.age_s = std::difftime(std::time(nullptr), st.st_mtime);
  }
  return f;
}

std::string human_bytes(uint64_t b) {
  char buf[32];
  if (b < 1024)
    std::snprintf(buf, sizeof(buf), "%lu B", static_cast<unsigned long>(b));
  else if (b < (1u << 20))
    std::snprintf(buf, sizeof(buf), "%.1f KiB", static_cast<double>(b) / 1024);
  else
    std::snprintf(buf, sizeof(buf), "%.1f MiB", static_cast<double>(b) / (1 << 20));
  return buf;
}

// Reads and verifies an entry; on failure `why` says what is wrong.
std::optional<compiler_cache::Entry> load(const std::string& path, std::string* why) {
  try {
    std::vector<uint8_t> bytes = compiler_cache::read_file(path);
    compiler_cache::Entry e = compiler_cache::decode_entry(bytes.data(), bytes.size());
    *why = compiler_cache::verify_entry(e, compiler_cache::key_of_path(path));
    if (why->empty()) return e;
  } catch (const Error& err) {
    *why = err.what();
  }
  return std::nullopt;
}

// "2G", "512M", "100K", "12345" -> bytes.
uint64_t parse_size(const std::string& s) {
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  std::string unit = end ? end : "";
  double mult = unit.empty() || unit == "B" ? 1
                : unit == "K"               ? 1024.0
                : unit == "M"               ? 1048576.0
                : unit == "G"               ? 1073741824.0
                                            : -1;
  if (end == s.c_str() || mult < 0 || !std::isfinite(v) || v < 0)
    throw Error("--max-size '" + s + "' is not a size; use bytes or a K, M or G suffix (e.g. 2G)");
  // 2^64 and above do not fit the byte count; converting them is undefined
  // (it gave 0 and emptied the cache).
  if (v * mult >= 18446744073709551616.0)
    throw Error("--max-size '" + s + "' is larger than 16 EiB; leave --max-size out for no size limit");
  return static_cast<uint64_t>(v * mult);
}

// "7d", "12h", "30m", "45s", "3600" (seconds) -> seconds.
double parse_age(const std::string& s) {
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  std::string unit = end ? end : "";
  double mult = unit.empty() || unit == "s" ? 1 : unit == "m" ? 60 : unit == "h" ? 3600 : unit == "d" ? 86400 : -1;
  if (end == s.c_str() || mult < 0 || !std::isfinite(v) || v < 0)
    throw Error("--max-age '" + s + "' is not a duration; use seconds or an s, m, h or d suffix (e.g. 7d)");
  return v * mult;
}

// Files a command could not remove (a read-only cache): counted and the first
// named, so the command fails instead of reporting fewer files removed.
struct NotRemoved {
  int count = 0;
  std::string first;  // "path: reason"
  void add(const std::string& path, int err) {
    if (count++ == 0) first = path + ": " + std::strerror(err);
  }
  void throw_if_any(const std::string& root) const {
    if (count == 0) return;
    throw Error("could not remove " + std::to_string(count) + " file" + (count == 1 ? "" : "s") + " from " + root +
                " (" + first + "); make the cache writable, or run this where it is");
  }
};

void remove_file(const std::string& path, int* count, NotRemoved* failed = nullptr) {
  if (::unlink(path.c_str()) == 0)
    ++*count;
  else if (failed && errno != ENOENT)  // ENOENT: another process removed it first
    failed->add(path, errno);
}

int cmd_ls(const compiler_cache::Store& store) {
  uint64_t total = 0;
  std::vector<std::string> entries = store.files(".entry");
  std::printf("%-16s  %-10s  %-14s  %-12s  %10s  %8s  %8s  %s\n", "KEY", "BACKEND", "COMPILER", "DEVICE", "SIZE", "AGE",
              "COMPILE", "GRAPH");
  for (const std::string& path : entries) {
    FileInfo f = info(path);
    total += f.bytes;
    std::string why;
    std::optional<compiler_cache::Entry> e = load(path, &why);
    const std::string key = compiler_cache::key_of_path(path).substr(0, 16);
    if (!e) {
      std::printf("%-16s  CORRUPT: %s\n", key.c_str(), why.c_str());
      continue;
    }
    nlohmann::json meta = nlohmann::json::parse(e->metadata);
    compiler_cache::KeyParts p = compiler_cache::key_parts_from_json(meta.value("key_parts", nlohmann::json::object()));
    const nlohmann::json summary = meta.value("summary", nlohmann::json::object());
    std::string ports;
    const nlohmann::json port_shapes = summary.value("ports", nlohmann::json::object());
    for (auto& [name, shape] : port_shapes.items())
      if (name == "tokens" || name == "x" || ports.empty()) ports = name + shape.dump();
    const nlohmann::json seconds = meta.value("compile_seconds", nlohmann::json(0.0));
    std::printf("%-16s  %-10s  %-14s  %-12s  %10s  %7.0fs  %7.2fs  %s nodes, %s\n", key.c_str(), p.backend.c_str(),
                p.compiler_version.c_str(), p.device_fingerprint.substr(0, 12).c_str(), human_bytes(f.bytes).c_str(),
                f.age_s, seconds.is_number() ? seconds.get<double>() : 0.0,
                summary.value("nodes", nlohmann::json(0)).dump().c_str(), ports.c_str());
  }
  std::vector<std::string> failed = store.files(".failed"), locks = store.files(".lock");
  for (const std::string& path : failed)
    std::printf("%-16s  FAILED (kiln cache explain %s)\n", compiler_cache::key_of_path(path).substr(0, 16).c_str(),
                compiler_cache::key_of_path(path).substr(0, 16).c_str());
  for (const std::string& path : locks) {
    std::optional<compiler_cache::LockHolder> h = compiler_cache::read_lock(path);
    std::printf("%-16s  LOCKED by %s pid %ld (heartbeat %.0f s ago)\n",
                compiler_cache::key_of_path(path).substr(0, 16).c_str(), h ? h->host.c_str() : "?", h ? h->pid : 0L,
                h ? h->heartbeat_age_s : 0.0);
  }
  std::printf("%zu entries, %s; %zu failed; %zu locked; cache %s\n", entries.size(), human_bytes(total).c_str(),
              failed.size(), locks.size(), store.root().c_str());
  return 0;
}

std::string utc_date(int64_t unix_time) {
  const std::time_t t = static_cast<std::time_t>(unix_time);
  std::tm tm{};
  ::gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M UTC", &tm);
  return buf;
}

int cmd_stats(const compiler_cache::Store& store) {
  uint64_t bytes = 0;
  const std::vector<std::string> entries = store.files(".entry");
  for (const std::string& path : entries) bytes += info(path).bytes;
  const compiler_cache::UsageTotals t = compiler_cache::read_usage(store.root());
  const compiler_cache::UsageRecord& u = t.sum;
  const int64_t uses = u.hits + u.misses;
  std::printf("cache %s: %zu entries, %s\n", store.root().c_str(), entries.size(), human_bytes(bytes).c_str());
  std::printf("hits: %ld\nmisses: %ld\nhit rate: %.1f%%\n", static_cast<long>(u.hits), static_cast<long>(u.misses),
              uses > 0 ? 100.0 * static_cast<double>(u.hits) / static_cast<double>(uses) : 0.0);
  std::printf("compile seconds saved: %.3f\ncompile seconds spent: %.3f\n", u.seconds_saved, u.compile_seconds);
  if (t.records == 0) {
    std::printf("no use recorded yet in %s\n", compiler_cache::usage_log_path(store.root()).c_str());
  } else {
    std::printf("from %ld process records, %s to %s, in %s", static_cast<long>(t.records),
                utc_date(t.first_unix).c_str(), utc_date(t.last_unix).c_str(),
                compiler_cache::usage_log_path(store.root()).c_str());
    std::printf(t.skipped > 0 ? " (%ld unreadable lines skipped)\n" : "\n", static_cast<long>(t.skipped));
  }
  return 0;
}

int cmd_verify(const compiler_cache::Store& store, bool fix) {
  int ok = 0, bad = 0, fixed = 0, unchecked = 0;
  LoadChecker loader;
  for (const std::string& path : store.files(".entry")) {
    std::string why;
    if (std::optional<compiler_cache::Entry> e = load(path, &why)) {
      // A sound checksum over bytes the plugin rejects is as bad as corruption.
      const LoadChecker::Result r = loader.check(*e, &why);
      if (r != LoadChecker::Result::NotLoadable) {
        ++ok;
        if (r == LoadChecker::Result::NotChecked) ++unchecked;
        continue;
      }
    }
    ++bad;
    std::printf("corrupt: %s: %s\n", path.c_str(), why.c_str());
    if (fix && !store.quarantine(path, why).empty()) ++fixed;
  }
  int stale = 0, temps = 0;
  if (fix) {
    for (const std::string& path : store.files(".lock")) {
      std::optional<compiler_cache::LockHolder> h = compiler_cache::read_lock(path);
      if (h && compiler_cache::lock_is_stale(*h, compiler_cache::LockPolicy{})) remove_file(path, &stale);
    }
    for (const std::string& path : store.files(""))
      if (compiler_cache::is_temp_file(path) && info(path).age_s > 3600) remove_file(path, &temps);
  }
  // Entries of plugins or devices not here pass on their checksum alone.
  if (unchecked > 0)
    std::printf("%d of the ok entries were checksummed only (their plugin build or device is not here)\n", unchecked);
  std::printf("%d entries ok, %d corrupt%s\n", ok, bad,
              fix ? (", " + std::to_string(fixed) + " quarantined, " + std::to_string(stale) + " stale locks and " +
                     std::to_string(temps) + " abandoned temp files removed")
                        .c_str()
                  : "");
  return fix ? (bad - fixed > 0 ? 1 : 0) : (bad > 0 ? 1 : 0);
}

// Deletes only files named as the cache names its own (a mistaken
// --cache-dir must not cost the user files), and says what it kept.
int cmd_clear(const compiler_cache::Store& store, bool failed, bool locks) {
  int n = 0;
  NotRemoved not_removed;
  std::vector<std::string> foreign;
  const bool all = !failed && !locks;
  for (const std::string& path : store.files("")) {
    if (!compiler_cache::is_cache_file_name(fs::path(path).filename().string())) {
      foreign.push_back(path);
      continue;
    }
    const bool is_failed = path.ends_with(".failed"), is_lock = path.ends_with(".lock");
    if (all || (failed && is_failed) || (locks && is_lock)) remove_file(path, &n, &not_removed);
  }
  if (all) {
    std::error_code ec;
    for (fs::recursive_directory_iterator it(store.quarantine_dir(), fs::directory_options::skip_permission_denied, ec),
         end;
         !ec && it != end; it.increment(ec)) {
      if (!it->is_regular_file(ec)) continue;
      if (compiler_cache::is_quarantine_file_name(it->path().filename().string()))
        remove_file(it->path().string(), &n, &not_removed);
      else
        foreign.push_back(it->path().string());
    }
    fs::remove(store.quarantine_dir(), ec);  // only if it is empty now
  }
  std::printf("removed %d files from %s\n", n, store.root().c_str());
  if (!foreign.empty())
    std::printf("kept %zu file%s that kiln did not write (e.g. %s); is --cache-dir right?\n", foreign.size(),
                foreign.size() == 1 ? "" : "s", foreign.front().c_str());
  not_removed.throw_if_any(store.root());
  return 0;
}

// Least recently used first (a hit touches an entry's mtime), each removed
// only if no process is using it (compiler_cache/evict.h): safe while
// trains and precompiles run on the same cache.
int cmd_gc(const compiler_cache::Store& store, const std::string& max_size, const std::string& max_age) {
  if (max_size.empty() && max_age.empty())
    throw Error("kiln cache gc needs --max-size and/or --max-age (e.g. --max-size 2G)");
  struct Listed {
    FileInfo file;
    int64_t mtime_ns = 0;
  };
  std::vector<Listed> entries;
  for (const std::string& p : store.files(".entry")) {
    const int64_t mtime = compiler_cache::mtime_ns(p);
    if (mtime >= 0) entries.push_back({info(p), mtime});
  }
  std::sort(entries.begin(), entries.end(), [](const Listed& a, const Listed& b) { return a.mtime_ns < b.mtime_ns; });
  uint64_t total = 0;
  for (const Listed& e : entries) total += e.file.bytes;
  int removed = 0, in_use = 0;
  NotRemoved not_removed;
  uint64_t freed = 0;
  const double age_limit = max_age.empty() ? -1 : parse_age(max_age);
  const uint64_t size_limit = max_size.empty() ? UINT64_MAX : parse_size(max_size);
  for (const Listed& e : entries) {
    const bool too_old = age_limit >= 0 && e.file.age_s > age_limit;
    if (!too_old && total - freed <= size_limit) continue;
    switch (compiler_cache::evict_entry(e.file.path, e.mtime_ns)) {
      case compiler_cache::Eviction::Removed:
        ++removed;
        freed += e.file.bytes;
        break;
      case compiler_cache::Eviction::Gone: freed += e.file.bytes; break;  // another gc was first
      case compiler_cache::Eviction::InUse:
      case compiler_cache::Eviction::Changed: ++in_use; break;
      case compiler_cache::Eviction::Failed: not_removed.add(e.file.path, errno); break;
    }
  }
  int temps = 0;
  for (const std::string& path : store.files(""))
    if (compiler_cache::is_temp_file(path) && info(path).age_s > 3600) remove_file(path, &temps, &not_removed);
  std::printf("removed %d entries (%s) and %d abandoned temp files; %s left in %s\n", removed,
              human_bytes(freed).c_str(), temps, human_bytes(total - freed).c_str(), store.root().c_str());
  if (in_use > 0)
    std::printf("kept %d entr%s in use (being read, compiled or used since listing); run gc again later\n", in_use,
                in_use == 1 ? "y" : "ies");
  not_removed.throw_if_any(store.root());
  return 0;
}

int cmd_explain(const compiler_cache::Store& store, const std::string& key) {
  if (key.empty()) throw Error("kiln cache explain needs a KEY (or a prefix of one, from 'kiln cache ls')");
  int shown = 0;
  for (const std::string& path : store.files("")) {
    const std::string k = compiler_cache::key_of_path(path);
    if (k.rfind(key, 0) != 0 || compiler_cache::is_temp_file(path)) continue;
    ++shown;
    std::printf("%s\n", path.c_str());
    if (path.ends_with(".entry")) {
      std::string why;
      std::optional<compiler_cache::Entry> e = load(path, &why);
      if (!e) {
        std::printf("  state: CORRUPT (%s); 'kiln cache verify --fix' quarantines it\n", why.c_str());
        continue;
      }
      nlohmann::json meta = nlohmann::json::parse(e->metadata);
      std::printf("  state: ok (checksum, key and IR hash verified)\n  key: %s\n", e->key.c_str());
      const nlohmann::json parts = meta.value("key_parts", nlohmann::json::object());
      for (auto& [name, v] : parts.items())
        std::printf("  %s: %s\n", name.c_str(), v.is_string() ? v.get<std::string>().c_str() : v.dump().c_str());
      std::printf("  IR: %zu bytes, executable: %zu bytes\n", e->ir.size(), e->executable.size());
      for (const char* f : {"compile_seconds", "created_unix", "host", "summary"})
        if (meta.contains(f)) std::printf("  %s: %s\n", f, meta[f].dump().c_str());
    } else if (path.ends_with(".failed")) {
      std::vector<uint8_t> log = compiler_cache::read_file(path);
      std::printf("  state: FAILED (deterministic compile error; kiln precompile --retry-failed retries it)\n  log: %s",
                  std::string(log.begin(), log.end()).c_str());
    } else if (path.ends_with(".lock")) {
      std::optional<compiler_cache::LockHolder> h = compiler_cache::read_lock(path);
      if (h)
        std::printf("  state: LOCKED by %s pid %ld, heartbeat %.0f s ago%s\n", h->host.c_str(), h->pid,
                    h->heartbeat_age_s,
                    compiler_cache::lock_is_stale(*h, compiler_cache::LockPolicy{}) ? " (stale)" : "");
    }
  }
  if (shown == 0)
    throw Error("no cache file has a key starting with '" + key + "' in " + store.root() + "; see 'kiln cache ls'");
  return 0;
}

}  // namespace

int run_cache(const std::vector<std::string>& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::fputs(kCacheUsage, args.empty() ? stderr : stdout);
    return args.empty() ? 2 : 0;
  }
  const std::string& sub = args[0];
  std::vector<std::string> rest(args.begin() + 1, args.end());
  std::string key;
  if (sub == "explain" && !rest.empty() && rest[0].rfind("--", 0) != 0) {
    key = rest[0];
    rest.erase(rest.begin());
  }
  trainer::Flags flags("cache " + sub);
  std::string dir, max_size, max_age;
  bool fix = false, failed = false, locks = false, all = false;
  flags.add("--cache-dir", &dir,
            "compile cache directory (default: $KILN_CACHE_DIR, $XDG_CACHE_HOME/kiln, ~/.cache/kiln)");
  if (sub == "verify")
    flags.add("--fix", &fix, "quarantine corrupt entries, remove stale locks and abandoned temp files");
  if (sub == "clear") {
    flags.add("--failed", &failed, "remove only failure markers");
    flags.add("--locks", &locks, "remove only lock files (make sure no kiln process is compiling)");
    flags.add("--all", &all, "remove everything (the default)");
  }
  if (sub == "gc") {
    flags.add("--max-size", &max_size, "keep at most this much (bytes, or K/M/G suffix), dropping least recently used");
    flags.add("--max-age", &max_age, "drop entries unused for longer (seconds, or s/m/h/d suffix)");
  }
  if (!flags.parse(rest)) return 0;
  if (dir.empty()) dir = compiler_cache::default_cache_dir();
  if (dir.empty())
    throw Error(
        "kiln cache: no compile cache directory ($HOME is not an existing directory, $XDG_CACHE_HOME is not "
        "absolute); give --cache-dir DIR or set KILN_CACHE_DIR");
  // K7b: a file given as the cache read as an empty cache ("0 entries", exit
  // 0), which hides a mistyped --cache-dir. A missing directory is an empty
  // cache, as before.
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
    throw Error("--cache-dir " + dir + " is not a directory; point it at a compile cache directory (or a new one)");
  const compiler_cache::Store store(dir);
  if (sub == "ls") return cmd_ls(store);
  if (sub == "stats") return cmd_stats(store);
  if (sub == "verify") return cmd_verify(store, fix);
  if (sub == "clear") return cmd_clear(store, failed && !all, locks && !all);
  if (sub == "gc") return cmd_gc(store, max_size, max_age);
  if (sub == "explain") return cmd_explain(store, key);
  throw Error("unknown cache subcommand '" + sub + "'; use ls, stats, verify, clear, gc or explain");
}

}  // namespace kiln::cli
