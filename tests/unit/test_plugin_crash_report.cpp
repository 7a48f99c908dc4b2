// What kiln says when a plugin misbehaves past its C ABI: an exception that
// escapes a plugin function names the plugin and the function
// (core/backend), and a fatal signal writes one line naming the plugin call
// that was running, then ends the process as the signal would
// (core/plugin_call, core/fatal_signal_report), without breaking the SIGBUS
// guard of mapped reads (trainer/data/mapping_fault).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <string>

#include "core/backend.h"
#include "core/fatal_signal_report.h"
#include "core/plugin_call.h"
#include "trainer/data/mapping_fault.h"

namespace {

// What the fake plugin's functions saw of the call record while they ran.
kiln::PluginCallInfo g_seen;

const char* version() {
  g_seen = kiln::plugin_call_for_signal();
  return "throws-1";
}
kiln_error* compile_throws(kiln_compile_args* /*args*/) {
  g_seen = kiln::plugin_call_for_signal();
  throw std::runtime_error("no kernel for this graph");
}
kiln_error* count_throws_int(kiln_device_count_args* /*args*/) { throw 42; }

// A plugin table with only the functions these tests call.
kiln::Plugin throwing_plugin() {
  static kiln_plugin_api table = [] {
    kiln_plugin_api t{};
    t.struct_size = sizeof(t);
    t.abi_major = KILN_ABI_MAJOR;
    t.abi_minor = KILN_ABI_MINOR;
    t.name = "throwing";
    t.compiler_version = version;
    t.compile = compile_throws;
    t.device_count = count_throws_int;
    return t;
  }();
  return kiln::Plugin("throwing", "/plugins/libkiln-backend-throwing.so", &table, sizeof(table));
}

std::string line_for(int sig) {
  char buf[2048];
  const unsigned long n = kiln::format_fatal_signal_line(sig, buf, sizeof buf);
  return std::string(buf, n);
}

TEST(PluginCrashReport, EscapedExceptionNamesPluginAndFunction) {
  const kiln::Plugin plugin = throwing_plugin();
  try {
    plugin.compile({1, 2, 3}, 0);
    FAIL() << "compile should have thrown";
  } catch (const kiln::PluginError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("throwing: compile let a C++ exception escape: no kernel for this graph"), std::string::npos)
        << what;
    EXPECT_NE(what.find("/plugins/libkiln-backend-throwing.so"), std::string::npos) << what;
    EXPECT_EQ(e.code, KILN_ERR_INTERNAL);
  }
  EXPECT_TRUE(g_seen.in_progress);
  EXPECT_STREQ(g_seen.function, "compile");
  EXPECT_STREQ(g_seen.backend, "throwing");
}

TEST(PluginCrashReport, NonStandardExceptionStillNamesTheCall) {
  const kiln::Plugin plugin = throwing_plugin();
  try {
    plugin.device_count();
    FAIL() << "device_count should have thrown";
  } catch (const kiln::PluginError& e) {
    EXPECT_NE(std::string(e.what()).find("throwing: device_count let a C++ exception escape; a plugin must catch"),
              std::string::npos)
        << e.what();
  }
}

TEST(PluginCrashReport, LineNamesTheCallInProgressThenTheLastOne) {
  const kiln::Plugin plugin = throwing_plugin();
  EXPECT_EQ(plugin.compiler_version(), "throws-1");
  EXPECT_STREQ(g_seen.function, "compiler_version");
  {
    const kiln::PluginCall outer(plugin, "execute");
    {
      const kiln::PluginCall inner(plugin, "error_message");
      EXPECT_STREQ(kiln::plugin_call_for_signal().function, "error_message");
    }
    const std::string line = line_for(SIGSEGV);
    EXPECT_EQ(line.rfind("kiln: fatal SIGSEGV in plugin 'throwing' (/plugins/libkiln-backend-throwing.so) during "
                         "execute; ",
                         0),
              0u)
        << line;
    EXPECT_EQ(line.find('\n'), line.size() - 1) << "one line: " << line;
  }
  const std::string after = line_for(SIGABRT);
  EXPECT_EQ(after.rfind("kiln: fatal SIGABRT outside any plugin call (the last was 'throwing' error_message", 0), 0u)
      << after;
}

TEST(PluginCrashReport, LongPathsAreCutToOneLine) {
  const std::string path(4000, 'p');
  static kiln_plugin_api table{};
  const kiln::Plugin plugin("long", path, &table, 0);
  const kiln::PluginCall call(plugin, "load");
  char buf[128];
  const unsigned long n = kiln::format_fatal_signal_line(SIGILL, buf, sizeof buf);
  ASSERT_EQ(n, sizeof buf);
  EXPECT_EQ(buf[n - 1], '\n');
}

// Under ASan its own fatal-signal handler, installed before kiln's, reports
// and exits 1 before kiln's one-line report and re-raise can be checked.
// GCC says ASan with __SANITIZE_ADDRESS__, clang with __has_feature.
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KILN_BUILT_WITH_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(KILN_BUILT_WITH_ASAN)
#define KILN_SKIP_UNDER_ASAN() GTEST_SKIP() << "ASan's fatal-signal handler runs before kiln's report"
#else
#define KILN_SKIP_UNDER_ASAN() (void)0
#endif

TEST(PluginCrashReportDeathTest, SignalIsReportedAndReraised) {
  KILN_SKIP_UNDER_ASAN();
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const kiln::Plugin plugin = throwing_plugin();
  EXPECT_EXIT(
      {
        kiln::install_fatal_signal_report();
        const kiln::PluginCall call(plugin, "execute");
        std::raise(SIGSEGV);
      },
      ::testing::KilledBySignal(SIGSEGV),
      "kiln: fatal SIGSEGV in plugin 'throwing' \\(/plugins/libkiln-backend-throwing.so\\) during execute; ");
}

// The reporter installed first (as `kiln train` does) and the SIGBUS guard
// of mapped reads armed after it: a guarded read that faults still comes
// back with the address; a SIGBUS outside a guarded read is reported.
TEST(PluginCrashReportDeathTest, MappedReadGuardChainsToTheReport) {
  KILN_SKIP_UNDER_ASAN();
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  const std::string path = (std::filesystem::temp_directory_path() / "kiln_sigbus_chain.bin").string();
  EXPECT_EXIT(
      {
        kiln::install_fatal_signal_report();
        const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600);
        const long page = ::sysconf(_SC_PAGESIZE);
        if (fd < 0 || ::ftruncate(fd, 2 * page) != 0) std::_Exit(2);
        auto* map = static_cast<const volatile char*>(::mmap(nullptr, 2 * page, PROT_READ, MAP_SHARED, fd, 0));
        if (::ftruncate(fd, 0) != 0) std::_Exit(2);
        char sink = 0;
        const void* fault = kiln::data::read_mapping([&] { sink = map[page]; });
        std::fprintf(stderr, "guarded read %s\n", fault != nullptr ? "caught its fault" : "did not fault");
        std::fflush(stderr);
        ::unlink(path.c_str());
        (void)sink;
        std::raise(SIGBUS);
      },
      ::testing::KilledBySignal(SIGBUS), "guarded read caught its fault\nkiln: fatal SIGBUS ");
}

}  // namespace
