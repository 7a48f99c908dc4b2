// Shared by the fuzz harnesses (tests/fuzz/fuzz_*.cpp): a scratch directory
// for readers that take a path, and a check that aborts so libFuzzer (and
// the replay tests) report a broken invariant like a crash.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

// Every harness defines both; libFuzzer calls them, and so does
// replay_main.cpp in builds without libFuzzer.
extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv);
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

#define KILN_FUZZ_CHECK(cond, what)                                                               \
  do {                                                                                            \
    if (!(cond)) {                                                                                \
      std::fprintf(stderr, "%s:%d: fuzz invariant broken: %s\n  %s\n", __FILE__, __LINE__, #cond, \
                   std::string(what).c_str());                                                    \
      std::abort();                                                                               \
    }                                                                                             \
  } while (0)

namespace kiln::fuzz {

// A fresh directory for this process (tmpfs when there is one: harnesses
// write a file per input), removed at exit.
inline const std::filesystem::path& scratch_dir() {
  static const std::filesystem::path dir = [] {
    std::string base = "/dev/shm";
    if (!std::filesystem::is_directory(base) || ::access(base.c_str(), W_OK) != 0)
      base = std::filesystem::temp_directory_path().string();
    std::string tmpl = base + "/kiln-fuzz-XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) {
      std::perror("mkdtemp");
      std::abort();
    }
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(scratch_dir(), ec);
    });
    return std::filesystem::path(tmpl);
  }();
  return dir;
}

inline void write_file(const std::filesystem::path& path, const void* data, size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
  out.close();
  KILN_FUZZ_CHECK(out.good(), "cannot write " + path.string());
}

inline void write_file(const std::filesystem::path& path, std::string_view text) {
  write_file(path, text.data(), text.size());
}

}  // namespace kiln::fuzz
