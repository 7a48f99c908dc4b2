// The plugin binary's identity (core/plugin_identity.h), a compile-cache key
// part: the GNU build-id when the file has one, checked against binutils'
// readelf, else the SHA-256 of the bytes, checked against FIPS 180-2's "abc"
// vector. Malformed files never crash the parser.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/plugin_identity.h"

namespace fs = std::filesystem;

namespace {

std::string cpu_plugin() { return std::string(KILN_TEST_BIN_DIR) + "/libkiln-backend-cpu.so"; }

std::vector<unsigned char> read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The build-id as readelf -n prints it, or "" when readelf is missing.
std::string readelf_build_id(const std::string& path) {
  const std::string command = "readelf -n '" + path + "' 2>/dev/null";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return {};
  std::string out;
  char buffer[512];
  while (std::fgets(buffer, sizeof(buffer), pipe) != nullptr) out += buffer;
  ::pclose(pipe);
  const std::string tag = "Build ID: ";
  const size_t at = out.find(tag);
  if (at == std::string::npos) return {};
  const size_t end = out.find_first_of(" \n", at + tag.size());
  return out.substr(at + tag.size(), end - at - tag.size());
}

fs::path temp_file(const std::string& name, const std::string& bytes) {
  fs::path path = fs::temp_directory_path() / ("kiln-identity-" + std::to_string(::getpid()) + "-" + name);
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

TEST(PluginIdentity, BuildIdMatchesReadelf) {
  const std::string expected = readelf_build_id(cpu_plugin());
  if (expected.empty()) GTEST_SKIP() << "readelf (binutils) is not installed, or the cpu plugin has no build-id";
  EXPECT_EQ(kiln::plugin_binary_identity(cpu_plugin()), "build-id:" + expected);
  // Once per process in the host, but the same answer every time.
  EXPECT_EQ(kiln::plugin_binary_identity(cpu_plugin()), "build-id:" + expected);
}

TEST(PluginIdentity, FileWithoutBuildIdIsHashed) {
  const fs::path path = temp_file("abc", "abc");
  EXPECT_EQ(kiln::plugin_binary_identity(path.string()),
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  fs::remove(path);
}

TEST(PluginIdentity, TruncatedOrCorruptElfHasNoBuildId) {
  std::vector<unsigned char> image = read_all(cpu_plugin());
  ASSERT_GT(image.size(), 4096u);
  ASSERT_FALSE(kiln::elf_build_id(image.data(), image.size()).empty());
  // Every prefix up to the program headers and a little past: never a read
  // outside the image (the ASan build would say), never a wrong answer.
  for (size_t n = 0; n < 1024; ++n) {
    const std::string id = kiln::elf_build_id(image.data(), n);
    EXPECT_TRUE(id.empty() || id == kiln::elf_build_id(image.data(), image.size())) << n;
  }
  // A note header claiming more than the file holds.
  std::vector<unsigned char> bad = image;
  for (size_t i = 64; i < 1024; ++i) bad[i] = 0xff;
  EXPECT_EQ(kiln::elf_build_id(bad.data(), bad.size()), "");
}

TEST(PluginIdentity, UnreadableFileNamesIt) {
  try {
    kiln::plugin_binary_identity("/nonexistent/libkiln-backend-gone.so");
    ADD_FAILURE() << "a missing file must throw";
  } catch (const kiln::Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot identify plugin /nonexistent/libkiln-backend-gone.so"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
