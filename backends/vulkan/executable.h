// The executable bytes compile produces and load consumes:
//
//   char magic[8] "KILNVK01" | u32 format | string compiler version |
//   string device fingerprint | string device name | u32 sections |
//   { u32 tag, u64 size, bytes }...
//
// (strings: u64 length + bytes). Sections: 1 the SPIR-V of every shader the
// schedule uses (u64 count, { string name, u64 words, u32 words[] }), 2 the
// schedule (dispatch sequence and specializations), 3 the VkPipelineCache
// data (u64 FNV-1a checksum of the data, then the data). Unknown tags are
// skipped: later versions may append.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "device.h"
#include "kiln/plugin_kit.hpp"
#include "schedule.h"

#pragma GCC visibility push(hidden)

namespace kiln::vk {

inline constexpr uint32_t kSectionSpirv = 1;
inline constexpr uint32_t kSectionSchedule = 2;
inline constexpr uint32_t kSectionPipelineCache = 3;

struct ExecutableImage {
  plugin_kit::ContainerStamp stamp;          // compiler version, device compiled for
  std::vector<std::vector<uint32_t>> spirv;  // one per Schedule::shaders entry
  Schedule schedule;
  std::vector<uint8_t> pipeline_cache;
  uint64_t pipeline_cache_checksum = 0;
};

std::vector<uint8_t> encode_executable(const ExecutableImage& image);

// Throws KILN_ERR_CORRUPT for anything malformed, including an executable
// from another compiler version. A bad pipeline cache is NOT an error here:
// see pipeline_cache_problem.
ExecutableImage decode_executable(const uint8_t* bytes, size_t size);

uint64_t checksum(const std::vector<uint8_t>& data);

// Why the image's pipeline-cache data must not reach this device's driver
// (malformed header, another vendor/device/pipelineCacheUUID, checksum
// mismatch), or empty when it may.
std::string pipeline_cache_problem(const ExecutableImage& image, const DeviceInfo& device);

}  // namespace kiln::vk

#pragma GCC visibility pop
