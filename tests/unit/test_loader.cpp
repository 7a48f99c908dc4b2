// The plugin loader's diagnostics, and the host handles over a plugin
// table (exercised through an in-process fake backend).
#include <gtest/gtest.h>

#include <unistd.h>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/backend.h"
#include "core/error.h"
#include "core/registry.h"

namespace fs = std::filesystem;

namespace {

std::string bad_plugin(const std::string& name) {
  return std::string(KILN_TEST_BAD_PLUGIN_DIR) + "/libkiln-backend-" + name + ".so";
}

std::string cpu_plugin() { return std::string(KILN_TEST_BIN_DIR) + "/libkiln-backend-cpu.so"; }

fs::path temp_dir() {
  static const fs::path dir = fs::temp_directory_path() / ("kiln-test-loader-" + std::to_string(getpid()));
  // Removed at exit; libraries loaded from it stay mapped, which Linux allows.
  static const struct Cleanup {
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } cleanup;
  fs::create_directories(dir);
  return dir;
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const kiln::Error& e) {
    return e.what();
  }
  return "(no kiln::Error thrown)";
}

// The version this kiln speaks, spelled as the loader prints it.
#define KILN_STR_(x) #x
#define KILN_STR(x) KILN_STR_(x)
#define KILN_ABI_STR KILN_STR(KILN_ABI_MAJOR) "." KILN_STR(KILN_ABI_MINOR)

struct BadCase {
  const char* name;
  const char* expected;
};
void PrintTo(const BadCase& c, std::ostream* os) { *os << c.name; }

class BadPlugin : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadPlugin, IsSkippedWithReason) {
  const BadCase& c = GetParam();
  kiln::PluginRecord r = kiln::Registry::instance().load_file(bad_plugin(c.name));
  EXPECT_FALSE(r.loaded);
  EXPECT_EQ(r.plugin, nullptr);
  EXPECT_NE(r.reason.find(c.expected), std::string::npos) << r.reason;
  EXPECT_EQ(r.reason.find('\n'), std::string::npos) << "reasons are one line";
  EXPECT_EQ(kiln::Registry::instance().find(c.name), nullptr);
}

INSTANTIATE_TEST_SUITE_P(
    Loader, BadPlugin,
    ::testing::Values(BadCase{"wrong_abi",
                              "built for kiln plugin ABI 2.0, this kiln speaks " KILN_ABI_STR "; rebuild the plugin"},
                      BadCase{"not_a_plugin", "no kiln_plugin_get_api symbol; not a kiln plugin"},
                      BadCase{"short_table", "smaller than"},
                      BadCase{"incomplete", "lacks required functions: error_destroy, error_message"},
                      BadCase{"declined", "cannot run it: no test accelerator on this machine"},
                      BadCase{"missing_symbol", "undefined symbol: kiln_test_symbol_nobody_defines"},
                      BadCase{"null_table", "kiln_plugin_get_api returned NULL"}),
    [](const auto& info) { return std::string(info.param.name); });

// A table from an older minor version (struct_size smaller than this host's
// sizeof(kiln_plugin_api), but holding every required function) loads; the
// fields it lacks count as absent. Its storage is exactly struct_size bytes,
// so the ASan build catches any read past it.
TEST(Loader, OlderMinorTableLoadsWithoutLaterFields) {
  kiln::PluginRecord r = kiln::Registry::instance().load_file(bad_plugin("old_table"));
  ASSERT_TRUE(r.loaded) << r.reason;
  EXPECT_EQ(r.plugin->raw_table_size(), offsetof(kiln_plugin_api, op_supported));
  EXPECT_TRUE(r.plugin->has(&kiln_plugin_api::synchronize));
  EXPECT_FALSE(r.plugin->has(&kiln_plugin_api::op_supported));
}

TEST(Loader, TextFileNamedLikeAPlugin) {
  fs::path junk = temp_dir() / "libkiln-backend-junk.so";
  std::ofstream(junk) << "this is not an ELF file\n";
  kiln::PluginRecord r = kiln::Registry::instance().load_file(junk.string());
  EXPECT_FALSE(r.loaded);
  EXPECT_NE(r.reason.find("not a loadable shared library"), std::string::npos) << r.reason;
  EXPECT_EQ(r.reason.find(junk.string()), std::string::npos) << "path is not repeated";
}

TEST(Loader, MissingFile) {
  kiln::PluginRecord r = kiln::Registry::instance().load_file((temp_dir() / "libkiln-backend-gone.so").string());
  EXPECT_FALSE(r.loaded);
  EXPECT_EQ(r.reason, "no such file");
}

TEST(Loader, SameFileIsRecordedOnce) {
  auto& reg = kiln::Registry::instance();
  reg.load_file(bad_plugin("wrong_abi"));
  size_t before = reg.records().size();
  // The same file through a different spelling of its path.
  reg.load_file(std::string(KILN_TEST_BAD_PLUGIN_DIR) + "/./libkiln-backend-wrong_abi.so");
  EXPECT_EQ(reg.records().size(), before);
}

TEST(Loader, UnknownBackendExplainsSearchPath) {
  std::string msg = error_of([] { kiln::Registry::instance().open("nope", 0); });
  EXPECT_NE(msg.find("no backend 'nope'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("loaded backends:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("KILN_PLUGIN_PATH"), std::string::npos) << msg;
  EXPECT_NE(msg.find("libkiln-backend-nope.so"), std::string::npos) << msg;
}

TEST(Loader, SkippedBackendReportsItsReason) {
  auto& reg = kiln::Registry::instance();
  reg.load_file(bad_plugin("wrong_abi"));
  std::string msg = error_of([&] { reg.open("wrong_abi", 0); });
  EXPECT_NE(msg.find("not loaded: built for kiln plugin ABI 2.0"), std::string::npos) << msg;
}

TEST(Loader, OpenByPathOfBadPlugin) {
  std::string msg = error_of([] { kiln::Registry::instance().open(bad_plugin("not_a_plugin"), 0); });
  EXPECT_NE(msg.find("cannot use plugin"), std::string::npos) << msg;
  EXPECT_NE(msg.find("no kiln_plugin_get_api symbol"), std::string::npos) << msg;
}

TEST(Loader, SearchPathHonoursEnvironment) {
  const char* old = std::getenv("KILN_PLUGIN_PATH");
  std::string saved = old ? old : "";
  setenv("KILN_PLUGIN_PATH", "/first::/second", 1);
  auto path = kiln::Registry::instance().search_path();
  if (old)
    setenv("KILN_PLUGIN_PATH", saved.c_str(), 1);
  else
    unsetenv("KILN_PLUGIN_PATH");
  ASSERT_GE(path.size(), 3u);
  EXPECT_EQ(path[0], "/first");
  EXPECT_EQ(path[1], "/second");
  // Then the directory of this executable.
  EXPECT_EQ(fs::canonical(path[2]), fs::canonical("/proc/self/exe").parent_path());
}

TEST(Loader, CpuPlugin) {
  if (!fs::exists(cpu_plugin())) GTEST_SKIP() << cpu_plugin() << " not built yet";
  auto& reg = kiln::Registry::instance();
  kiln::PluginRecord r = reg.load_file(cpu_plugin());
  ASSERT_TRUE(r.loaded) << r.reason;
  EXPECT_EQ(r.plugin->name, "cpu");
  EXPECT_EQ(reg.find("cpu"), r.plugin);

  // A second copy of the same backend is refused, naming the first.
  fs::path copy = temp_dir() / "libkiln-backend-cpu.so";
  fs::copy_file(cpu_plugin(), copy, fs::copy_options::overwrite_existing);
  kiln::PluginRecord dup = reg.load_file(copy.string());
  EXPECT_FALSE(dup.loaded);
  EXPECT_NE(dup.reason.find("backend 'cpu' already loaded from"), std::string::npos) << dup.reason;

  auto device = reg.open("cpu", 0);
  EXPECT_EQ(device->backend(), "cpu");
  EXPECT_EQ(device->properties().kind, KILN_DEVICE_CPU);
  std::string msg = error_of([&] { reg.open("cpu", 1000); });
  EXPECT_NE(msg.find("no device 1000"), std::string::npos) << msg;

  kiln::DeviceBuffer buf(*device, 64);
  std::vector<float> in(16), out(16);
  for (int i = 0; i < 16; ++i) in[i] = float(i) * 0.5f;
  buf.write(in.data(), 64);
  buf.read(out.data(), 64);
  EXPECT_EQ(in, out);
}

// ---------------------------------------------------------------- fake backend

}  // namespace

struct kiln_error {
  int32_t code;
  std::string message;
};
struct kiln_device {
  int index;
};
struct kiln_buffer {
  std::vector<uint8_t> bytes;
};

namespace {

int g_live_buffers = 0;
bool g_device_closed = false;

kiln_plugin_api fake_api() {
  kiln_plugin_api api{};
  api.struct_size = sizeof(api);
  api.abi_major = KILN_ABI_MAJOR;
  api.abi_minor = KILN_ABI_MINOR;
  api.name = "fake";
  api.error_destroy = [](kiln_error* e) { delete e; };
  api.error_message = [](const kiln_error* e) { return e->message.c_str(); };
  api.error_code = [](const kiln_error* e) { return e->code; };
  api.device_count = [](kiln_device_count_args* a) -> kiln_error* {
    a->count = 2;
    return nullptr;
  };
  api.device_properties = [](kiln_device_properties_args* a) -> kiln_error* {
    std::memset(a->properties->name, 'x', sizeof(a->properties->name));  // unterminated
    a->properties->kind = KILN_DEVICE_OTHER;
    return nullptr;
  };
  api.device_open = [](kiln_device_open_args* a) -> kiln_error* {
    a->device = new kiln_device{a->device_index};
    return nullptr;
  };
  api.device_close = [](kiln_device* d) {
    g_device_closed = true;
    delete d;
  };
  api.buffer_alloc = [](kiln_buffer_alloc_args* a) -> kiln_error* {
    if (a->size_bytes > (1ull << 30)) return new kiln_error{KILN_ERR_OUT_OF_MEMORY, "out of memory"};
    a->buffer = new kiln_buffer{std::vector<uint8_t>(a->size_bytes)};
    ++g_live_buffers;
    return nullptr;
  };
  api.buffer_free = [](kiln_device*, kiln_buffer* b) {
    --g_live_buffers;
    delete b;
  };
  api.buffer_write = [](kiln_buffer_transfer_args* a) -> kiln_error* {
    std::memcpy(a->buffer->bytes.data() + a->offset, a->host, a->size_bytes);
    return nullptr;
  };
  api.buffer_read = [](kiln_buffer_transfer_args* a) -> kiln_error* {
    std::memcpy(a->host, a->buffer->bytes.data() + a->offset, a->size_bytes);
    return nullptr;
  };
  api.synchronize = [](kiln_device*) -> kiln_error* {
    return new kiln_error{KILN_ERR_DEVICE, "lost the device\nsecond line"};
  };
  return api;
}

std::shared_ptr<kiln::Plugin> fake_plugin(const kiln_plugin_api& api, size_t table_size = sizeof(kiln_plugin_api)) {
  return std::make_shared<kiln::Plugin>("fake", "/fake/libkiln-backend-fake.so", &api, table_size);
}

// Threads that open devices at once (ranks in one test process, a compile
// pool) share the first load of the plugin: each gets a working device, and
// TSan sees no race on the registry or the load guard's hooks.
TEST(Loader, ThreadsOpenTheSameBackendAtOnce) {
  if (!fs::exists(cpu_plugin())) GTEST_SKIP() << cpu_plugin() << " not built yet";
  constexpr int kThreads = 4;
  std::vector<std::unique_ptr<kiln::Device>> devices(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&devices, t] { devices[t] = kiln::Registry::instance().open("cpu", 0, 1); });
  for (std::thread& t : threads) t.join();
  for (const auto& d : devices) {
    ASSERT_NE(d, nullptr);
    EXPECT_EQ(d->backend(), "cpu");
  }
  EXPECT_EQ(kiln::Registry::instance().find("cpu").get(), &devices[0]->plugin());
}

TEST(BackendHandles, DeviceAndBuffers) {
  static const kiln_plugin_api api = fake_api();
  g_device_closed = false;
  {
    kiln::Device dev(fake_plugin(api), 1, 0);
    EXPECT_EQ(dev.index(), 1);
    EXPECT_EQ(std::strlen(dev.properties().name), sizeof(dev.properties().name) - 1);
    {
      kiln::DeviceBuffer a(dev, 8), b(dev, 8);
      EXPECT_EQ(g_live_buffers, 2);
      uint64_t v = 0x1122334455667788ull, r = 0;
      a.write(&v, 8);
      a.read(&r, 8);
      EXPECT_EQ(r, v);

      std::string msg = error_of([&] { a.write(&v, 8, 4); });
      EXPECT_NE(msg.find("overruns a buffer of 8 bytes"), std::string::npos) << msg;
      msg = error_of([&] { a.read(&r, 1, ~0ull); });
      EXPECT_NE(msg.find("overruns"), std::string::npos) << msg;
      // buffer_copy is NULL in this table: unsupported, not a crash.
      msg = error_of([&] { b.copy_from(a, 8); });
      EXPECT_EQ(msg,
                "fake: this backend does not support buffer_copy (no such function in "
                "/fake/libkiln-backend-fake.so)");
    }
    EXPECT_EQ(g_live_buffers, 0);

    std::string msg = error_of([&] { kiln::DeviceBuffer big(dev, 1288490189); });
    EXPECT_EQ(msg, "fake: buffer_alloc of 1.2 GiB failed: out of memory");
    msg = error_of([&] { dev.synchronize(); });
    EXPECT_EQ(msg, "fake: synchronize failed: lost the device second line");
  }
  EXPECT_TRUE(g_device_closed);
}

// supports(): a plugin without op_supported runs every device op, and no
// plugin runs a host collective (the executor runs those between pieces).
TEST(BackendHandles, SupportsWithoutOpSupported) {
  static const kiln_plugin_api api = fake_api();
  auto p = fake_plugin(api);
  EXPECT_TRUE(p->supports(KILN_OP_MATMUL));
  EXPECT_FALSE(p->supports(KILN_OP_ALL_REDUCE));
  EXPECT_EQ(p->compiler_version(), "");
}

TEST(BackendHandles, DeviceIndexOutOfRange) {
  static const kiln_plugin_api api = fake_api();
  std::string msg = error_of([] { kiln::Device dev(fake_plugin(api), 2, 0); });
  EXPECT_EQ(msg, "fake: no device 2; this backend has 2 devices (valid: 0..1)");
}

// An older plugin's table ends earlier: fields past api_size count as
// missing even if the memory after the table happens to be non-zero.
TEST(BackendHandles, ShortTableHidesLaterFields) {
  static const kiln_plugin_api api = fake_api();
  auto p = fake_plugin(api, offsetof(kiln_plugin_api, device_open));
  EXPECT_TRUE(p->has(&kiln_plugin_api::device_count));
  EXPECT_FALSE(p->has(&kiln_plugin_api::device_open));
  std::string msg = error_of([&] { kiln::Device dev(p, 0, 0); });
  EXPECT_NE(msg.find("does not support device_open"), std::string::npos) << msg;
}

}  // namespace
