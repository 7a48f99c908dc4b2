// The Vulkan physical devices this process can see (through one instance
// created on first use and kept for the process), in the loader's order,
// with what compile and the runtime need to know about each.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common.h"
#include "gemm_choice.h"
#include "kiln/plugin_kit.hpp"

#pragma GCC visibility push(hidden)

namespace kiln::vk {

struct DeviceInfo {
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  std::string name, vendor, driver_version;
  uint32_t vendor_id = 0, device_id = 0, api_version = 0;
  uint8_t pipeline_cache_uuid[VK_UUID_SIZE] = {};
  int32_t kind = KILN_DEVICE_OTHER;  // kiln_device_kind
  uint64_t memory_bytes = 0;         // the largest device-local heap
  uint32_t queue_family = 0;         // a queue family with compute
  uint64_t max_storage_range = 0;    // maxStorageBufferRange
  uint64_t storage_alignment = 4;    // minStorageBufferOffsetAlignment
  uint32_t max_groups[3] = {65535, 65535, 65535};
  uint32_t max_storage_buffers = 4;  // per stage
  uint32_t max_push_bytes = 128;
  uint32_t max_shared_bytes = 16384;
  uint32_t max_invocations = 128;
  // 64 hex digits over what determines compiled pipelines: device type,
  // ids, heaps, driver version, pipelineCacheUUID and the compiler version.
  std::string fingerprint;
  uint32_t low_precision = 0;        // KILN_LOWP_* bits
  uint32_t subgroup_size = 0;        // VkPhysicalDeviceSubgroupProperties
  bool subgroup_basic = false;       // basic subgroup operations (gl_SubgroupID) in compute shaders
  bool subgroup_arithmetic = false;  // ... and arithmetic ones (subgroupMax)
  // VK_NV_cooperative_matrix: listed, its feature set, and the subgroup-
  // scope fragment shapes with A = B = f16 and C = D = f32 (gemm_choice.h).
  bool coopmat_nv = false, coopmat_feature = false;
  bool memory_model = false;  // vulkanMemoryModel (1.2): the coopmat shader's SPIR-V declares it
  std::vector<FragmentShape> coopmat_f16_shapes;
  // Listed by name only (Debian 12's headers and glslang know neither):
  // native bf16 fragments with a newer toolchain (today bf16 GEMMs run on
  // the f16 fragments above, scaled per slice: gemm_coopmat.comp).
  bool coopmat_khr = false, coopmat2_nv = false, bfloat16_khr = false;
};

// The bytes one binding may span on `d`: maxStorageBufferRange, lowered by
// KILN_VULKAN_MAX_BINDING_BYTES (tests exercise the chunked paths with
// small tensors), less room to round a window's start down to the offset
// alignment; a multiple of 4. The lowering splits every operand into
// windows of at most this.
uint64_t binding_window_limit(const DeviceInfo& d);

// The fingerprint the device reports and executables are stamped with:
// DeviceInfo::fingerprint, plus KILN_VULKAN_GEMM when it is set (the GEMM
// choice changes the executable, so the compile cache must not serve one
// compiled under another choice).
std::string fingerprint(const DeviceInfo& d);

// What gemm_choice.h needs of the device.
GemmDevice gemm_device(const DeviceInfo& d);

// The devices, enumerated once. No loader, no ICD or no device is an empty
// list, with why_none() saying so, not an error.
kiln::plugin_kit::DeviceList<DeviceInfo>& device_list();

VkInstance instance();

// A logical device with one compute queue on a physical device; compile
// uses one of its own (it needs no opened kiln_device).
struct LogicalDevice {
  VkDevice device = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;
  explicit LogicalDevice(const DeviceInfo& info);
  ~LogicalDevice();
  LogicalDevice(const LogicalDevice&) = delete;
  LogicalDevice& operator=(const LogicalDevice&) = delete;
};

using plugin_kit::fingerprint_hex;

}  // namespace kiln::vk

#pragma GCC visibility pop
