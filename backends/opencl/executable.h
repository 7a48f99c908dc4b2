// The executable bytes compile produces and load consumes:
//
//   char magic[8] "KILNOCL1" | u32 format | string compiler version |
//   string device fingerprint | string device name | u32 sections |
//   { u32 tag, u64 size, bytes }...
//
// (strings: u64 length + bytes). Sections: the OpenCL C source (kept so load
// can rebuild when the driver rejects the binary), the program binary, and
// the schedule. Unknown section tags are skipped: later versions may append.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kiln/plugin_kit.hpp"
#include "schedule.h"

#pragma GCC visibility push(hidden)

namespace kiln::ocl {

struct ExecutableImage {
  plugin_kit::ContainerStamp stamp;  // compiler version, device compiled for
  std::string source;
  std::vector<uint8_t> binary;
  Schedule schedule;
};

std::vector<uint8_t> encode_executable(const ExecutableImage& image);

// Throws KILN_ERR_CORRUPT for anything malformed, including an executable
// from another compiler version (it must be recompiled, not reinterpreted).
ExecutableImage decode_executable(const uint8_t* bytes, size_t size);

}  // namespace kiln::ocl

#pragma GCC visibility pop
