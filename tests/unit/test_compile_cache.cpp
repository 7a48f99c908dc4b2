// The compile cache library (cache/): entry format, key, atomic store,
// quarantine, lock files, and lookup/compile/publish through the real cpu
// plugin. Cross-process behaviour (concurrent precompiles, SIGKILL, stale
// locks of dead processes, read-only dirs) is in tests/cli/precompile_*.sh.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <filesystem>
#include <fstream>

#include "compiler_cache/atomic_file.h"
#include "compiler_cache/compile_cache.h"
#include "compiler_cache/entry_format.h"
#include "compiler_cache/key.h"
#include "compiler_cache/lock.h"
#include "compiler_cache/store.h"
#include "core/error.h"
#include "core/hash.h"
#include "core/registry.h"
#include "graph/compiled_graph.h"

namespace kiln::compiler_cache {
namespace {

namespace fs = std::filesystem;

struct TempDir {
  fs::path path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "kiln-cache-test-XXXXXX").string();
    path = ::mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

KeyParts sample_parts(const std::vector<uint8_t>& ir) {
  KeyParts p;
  p.backend = "cpu";
  p.compiler_version = "cpu-1";
  p.device_fingerprint = std::string(64, 'a');
  p.ir_hash = sha256_hex(ir.data(), ir.size());
  return p;
}

Entry sample_entry(KeyParts* parts_out = nullptr) {
  Entry e;
  e.ir = {1, 2, 3, 4, 5, 6, 7, 8};
  e.executable = {9, 8, 7, 6, 5};
  KeyParts parts = sample_parts(e.ir);
  e.key = compute_key(parts);
  e.metadata = nlohmann::json{{"key_parts", key_parts_json(parts)}}.dump();
  if (parts_out) *parts_out = parts;
  return e;
}

TEST(CacheEntry, RoundTrips) {
  Entry e = sample_entry();
  std::vector<uint8_t> bytes = encode_entry(e);
  Entry d = decode_entry(bytes.data(), bytes.size());
  EXPECT_EQ(d.key, e.key);
  EXPECT_EQ(d.ir, e.ir);
  EXPECT_EQ(d.executable, e.executable);
  EXPECT_EQ(d.metadata, e.metadata);
  EXPECT_EQ(verify_entry(d, e.key), "");
}

TEST(CacheEntry, EveryTruncationAndEveryBitFlipIsRejected) {
  std::vector<uint8_t> bytes = encode_entry(sample_entry());
  for (size_t n = 0; n < bytes.size(); ++n) EXPECT_THROW(decode_entry(bytes.data(), n), Error) << n;
  for (size_t i = 0; i < bytes.size(); ++i)
    for (int bit = 0; bit < 8; bit += 3) {
      std::vector<uint8_t> bad = bytes;
      bad[i] ^= static_cast<uint8_t>(1u << bit);
      EXPECT_THROW(decode_entry(bad.data(), bad.size()), Error) << "byte " << i << " bit " << bit;
    }
}

TEST(CacheKey, DependsOnEveryPartAndNothingElse) {
  std::vector<uint8_t> ir = {1, 2, 3};
  KeyParts p = sample_parts(ir);
  const std::string k = compute_key(p);
  EXPECT_TRUE(is_hex_key(k));
  EXPECT_EQ(compute_key(sample_parts(ir)), k);
  for (std::string KeyParts::*f : {&KeyParts::backend, &KeyParts::compiler_version, &KeyParts::device_fingerprint,
                                   &KeyParts::options, &KeyParts::ir_hash, &KeyParts::plugin_binary}) {
    KeyParts q = p;
    q.*f += "x";
    EXPECT_NE(compute_key(q), k);
  }
  // Field boundaries count: moving a character between parts changes the key.
  KeyParts a = p, b = p;
  a.backend = "cp";
  a.compiler_version = "ucpu-1";
  b.backend = "cpu";
  b.compiler_version = "cpu-1";
  EXPECT_NE(compute_key(a), compute_key(b));
}

// A rebuilt plugin (same compiler_version, another binary) misses, and the
// miss names the plugin binary. Entries from before the part existed (none
// recorded) keep verifying against their own keys.
TEST(CacheKey, PluginBinaryIsAKeyPartAndExplainedOnAMiss) {
  TempDir dir;
  KeyParts old_build;
  Entry e = sample_entry(&old_build);
  ASSERT_TRUE(old_build.plugin_binary.empty());
  EXPECT_EQ(verify_entry(e, e.key), "");
  old_build.plugin_binary = "build-id:" + std::string(40, 'a');
  e.key = compute_key(old_build);
  const nlohmann::json summary = {{"structure", "same graph"}};
  e.metadata = nlohmann::json{{"key_parts", key_parts_json(old_build)}, {"summary", summary}}.dump();
  Store(dir.path.string()).publish(old_build, e);

  KeyParts new_build = old_build;
  new_build.plugin_binary = "build-id:" + std::string(40, 'b');
  EXPECT_NE(compute_key(new_build), e.key);
  const std::string why = explain_miss(dir.path.string(), new_build, compute_key(new_build), summary);
  EXPECT_NE(why.find("the nearest cached entry differs in plugin binary (build-id:bbbbbbbbbbbb here, "
                     "build-id:aaaaaaaaaaaa in the cache"),
            std::string::npos)
      << why;
}

TEST(CacheStore, PublishesReadsAndQuarantinesCorruptEntries) {
  TempDir dir;
  Store store(dir.path.string());
  ASSERT_EQ(store.check_writable(), "");
  KeyParts parts;
  Entry e = sample_entry(&parts);
  store.publish(parts, e);
  const std::string path = store.entry_path(parts, e.key);
  EXPECT_NE(path.find("/v1/cpu-cpu-1/" + parts.device_fingerprint + "/" + e.key.substr(0, 2) + "/"), std::string::npos);
  std::optional<Entry> got = store.read(path, e.key);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->executable, e.executable);
  // No temp files are left behind by a successful publish.
  for (const std::string& f : store.files("")) EXPECT_FALSE(is_temp_file(f)) << f;

  // Flip one byte: the read is a miss and the file moves to quarantine/.
  std::vector<uint8_t> bytes = read_file(path);
  bytes[bytes.size() / 2] ^= 0x40;
  write_file_atomically(path, bytes.data(), bytes.size());
  EXPECT_FALSE(store.read(path, e.key));
  EXPECT_FALSE(fs::exists(path));
  int quarantined = 0;
  for (const auto& f : fs::directory_iterator(store.quarantine_dir()))
    quarantined += f.path().extension() != ".why" ? 1 : 0;
  EXPECT_EQ(quarantined, 1);

  // An entry stored under the wrong key's name is rejected too.
  Entry other = e;
  other.ir.push_back(42);
  EXPECT_NE(verify_entry(other, e.key), "");
}

TEST(CacheStore, UnwritableDirectoryIsReportedNotThrown) {
  TempDir dir;
  const fs::path file = dir.path / "a-file";
  std::ofstream(file) << "x";
  // A directory below a regular file can never be created, even as root.
  Store store((file / "cache").string());
  EXPECT_NE(store.check_writable(), "");
}

TEST(CacheLock, ExcludesAndTakesOverALockOfADeadProcess) {
  TempDir dir;
  const std::string path = (dir.path / "k.lock").string();
  LockPolicy policy;
  {
    std::unique_ptr<Lock> a = Lock::try_acquire(path, policy);
    ASSERT_TRUE(a);
    EXPECT_FALSE(Lock::try_acquire(path, policy));
    std::optional<LockHolder> h = read_lock(path);
    ASSERT_TRUE(h);
    EXPECT_EQ(h->pid, static_cast<long>(::getpid()));
    EXPECT_FALSE(lock_is_stale(*h, policy));
  }
  EXPECT_FALSE(fs::exists(path));  // released

  // A lock left by a process that has exited.
  pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ASSERT_GT(child, 0);
  int status = 0;
  ::waitpid(child, &status, 0);
  std::ofstream(path) << this_host() << " " << child << " deadbeef\n";
  std::unique_ptr<Lock> taken = Lock::try_acquire(path, policy);
  ASSERT_TRUE(taken);
  EXPECT_EQ(read_lock(path)->pid, static_cast<long>(::getpid()));
}

// Issue 13 item 3: a lock whose heartbeat lies in the future (clock skew on
// a shared cache, a copied file) never aged, so every locked graph stalled
// for the whole max_wait.
TEST(CacheLock, AHeartbeatFarInTheFutureIsStale) {
  TempDir dir;
  const std::string path = (dir.path / "k.lock").string();
  LockPolicy policy;
  std::ofstream(path) << "another-host 4242 cafe\n";
  const struct timespec times[2] = {{::time(nullptr) + 86400, 0}, {::time(nullptr) + 86400, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0);
  std::optional<LockHolder> h = read_lock(path);
  ASSERT_TRUE(h);
  EXPECT_LT(h->heartbeat_age_s, -80000);
  EXPECT_TRUE(lock_is_stale(*h, policy));
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(Lock::acquire(path, policy, nullptr));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
  // Within the stale age either way, a skewed clock still holds the lock.
  h->heartbeat_age_s = -30;
  EXPECT_FALSE(lock_is_stale(*h, policy));
}

TEST(CacheLock, BoundedWaitGivesUp) {
  TempDir dir;
  const std::string path = (dir.path / "k.lock").string();
  LockPolicy policy;
  policy.max_wait = std::chrono::milliseconds(200);
  std::unique_ptr<Lock> held = Lock::try_acquire(path, policy);
  ASSERT_TRUE(held);
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(Lock::acquire(path, policy, nullptr));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(5));
}

graph::Graph small_graph(int64_t rows) {
  graph::Graph g;
  graph::ValueId x = g.input("x", KILN_F32, {rows, 8});
  g.output("y", g.gelu(g.add(x, x)));
  return g;
}

TEST(CompileCache, SecondBuildOfAGraphIsAHitAndShapeMissesAreExplained) {
  TempDir dir;
  std::unique_ptr<Device> cpu = Registry::instance().open("cpu", 0, 1);
  CacheConfig cfg;
  cfg.dir = dir.path.string();
  configure(cfg);
  ASSERT_TRUE(writable());
  const CacheStats before = stats();
  { graph::CompiledGraph first(*cpu, small_graph(4)); }
  { graph::CompiledGraph second(*cpu, small_graph(4)); }
  const CacheStats after = stats();
  EXPECT_EQ(after.compiled - before.compiled, 1);
  EXPECT_EQ(after.hits - before.hits, 1);
  EXPECT_EQ(Store(cfg.dir).files(".entry").size(), 1u);

  cfg.require_precompiled = true;
  configure(cfg);
  try {
    graph::CompiledGraph other(*cpu, small_graph(6));
    ADD_FAILURE() << "a miss under --require-precompiled must throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("port 'x' is [6, 8] here, [4, 8] in the cache"), std::string::npos)
        << e.what();
  }
  configure(CacheConfig{});
}

TEST(CompileCache, ExtractModeRecordsWithoutCompiling) {
  std::unique_ptr<Device> cpu = Registry::instance().open("cpu", 0, 1);
  configure(CacheConfig{});
  const CacheStats before = stats();
  Extraction extraction;
  graph::CompiledGraph g(*cpu, small_graph(4), &extraction);
  EXPECT_THROW(g.run(), Error);
  ASSERT_EQ(extraction.tasks().size(), 1u);
  EXPECT_EQ(extraction.tasks()[0].backend, "cpu");
  EXPECT_EQ(stats().compiled, before.compiled);
  // Only the graph given the extraction records: another compiles as usual.
  graph::CompiledGraph compiled(*cpu, small_graph(4));
  EXPECT_EQ(extraction.tasks().size(), 1u);
  EXPECT_EQ(stats().compiled, before.compiled + 1);
}

}  // namespace
}  // namespace kiln::compiler_cache

namespace kiln::compiler_cache {
namespace {

// The same computation on f32, bf16 and f16 inputs is three graphs: the IR
// carries each value's dtype, so the hash and the cache key differ.
TEST(CompileCache, TheKeyChangesWithDtype) {
  TempDir dir;
  std::unique_ptr<Device> cpu = Registry::instance().open("cpu", 0, 1);
  CacheConfig cfg;
  cfg.dir = dir.path.string();
  configure(cfg);
  ASSERT_TRUE(writable());
  const CacheStats before = stats();
  for (kiln_dtype dtype : {KILN_F32, KILN_BF16, KILN_F16}) {
    graph::Graph g;
    g.output("y", g.cast(g.input("x", dtype, {4, 8}), KILN_F32));
    graph::CompiledGraph compiled(*cpu, g);
  }
  EXPECT_EQ(stats().compiled - before.compiled, 3);
  EXPECT_EQ(Store(cfg.dir).files(".entry").size(), 3u);
  configure(CacheConfig{});
}

}  // namespace
}  // namespace kiln::compiler_cache
