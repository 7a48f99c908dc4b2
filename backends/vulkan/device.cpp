#include "device.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "version.h"

namespace kiln::vk {

namespace {

VkInstance g_instance = VK_NULL_HANDLE;

std::string version_string(uint32_t v) {
  return std::to_string(VK_API_VERSION_MAJOR(v)) + "." + std::to_string(VK_API_VERSION_MINOR(v)) + "." +
         std::to_string(VK_API_VERSION_PATCH(v));
}

int32_t kind_of(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return KILN_DEVICE_CPU;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return KILN_DEVICE_GPU;
    default: return KILN_DEVICE_OTHER;
  }
}

std::string vendor_name(uint32_t id) {
  switch (id) {
    case 0x10DE: return "NVIDIA";
    case 0x1002: return "AMD";
    case 0x8086: return "Intel";
    case 0x13B5: return "ARM";
    case 0x5143: return "Qualcomm";
    case 0x10005: return "Mesa";
    default: {
      char buf[32];
      std::snprintf(buf, sizeof(buf), "vendor 0x%x", id);
      return buf;
    }
  }
}

// KILN_LOWP_* bits from the device's 16-bit features: storage buffers read
// and written in 16 bits (core in 1.1) and f16 shader arithmetic (core in
// 1.2). Only structs the device's version defines are chained.
uint32_t low_precision_features(VkPhysicalDevice pd, uint32_t api_version) {
  VkPhysicalDevice16BitStorageFeatures storage{};
  storage.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES;
  VkPhysicalDeviceShaderFloat16Int8Features float16{};
  float16.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES;
  VkPhysicalDeviceFeatures2 features{};
  features.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
  features.pNext = &storage;
  if (api_version >= VK_API_VERSION_1_2) storage.pNext = &float16;
  vkGetPhysicalDeviceFeatures2(pd, &features);
  uint32_t bits = 0;
  if (storage.storageBuffer16BitAccess == VK_TRUE) bits |= KILN_LOWP_16BIT_STORAGE;
  if (float16.shaderFloat16 == VK_TRUE) bits |= KILN_LOWP_F16_ARITHMETIC;
  // KILN_VULKAN_NO_16BIT_STORAGE=1 hides storageBuffer16BitAccess, so tests
  // can check how a device without it refuses bf16/f16 graphs.
  if (kiln::plugin_kit::env_flag("KILN_VULKAN_NO_16BIT_STORAGE")) bits &= ~uint32_t{KILN_LOWP_16BIT_STORAGE};
  return bits;
}

std::vector<std::string> extension_names(VkPhysicalDevice pd) {
  uint32_t n = 0;
  std::vector<std::string> names;
  if (vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, nullptr) != VK_SUCCESS) return names;
  std::vector<VkExtensionProperties> exts(n);
  if (vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, exts.data()) != VK_SUCCESS) return names;
  for (uint32_t i = 0; i < n; ++i) names.emplace_back(exts[i].extensionName);
  return names;
}

// VK_NV_cooperative_matrix's feature and its f16 x f16 + f32 subgroup
// shapes (the other types it lists, int8 and f16 accumulators, kiln does
// not use), and vulkanMemoryModel: glslang declares the VulkanMemoryModel
// capability for any shader with cooperative-matrix loads and stores.
void query_coopmat_nv(VkPhysicalDevice pd, DeviceInfo* d) {
  VkPhysicalDeviceCooperativeMatrixFeaturesNV coop{};
  coop.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV;
  VkPhysicalDeviceVulkanMemoryModelFeatures model{};
  model.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES;
  if (d->api_version >= VK_API_VERSION_1_2) coop.pNext = &model;
  VkPhysicalDeviceFeatures2 features{};
  features.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
  features.pNext = &coop;
  vkGetPhysicalDeviceFeatures2(pd, &features);
  d->coopmat_feature = coop.cooperativeMatrix == VK_TRUE;
  d->memory_model = model.vulkanMemoryModel == VK_TRUE;
  auto query = reinterpret_cast<PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV>(
      vkGetInstanceProcAddr(g_instance, "vkGetPhysicalDeviceCooperativeMatrixPropertiesNV"));
  if (query == nullptr) return;
  uint32_t n = 0;
  if (query(pd, &n, nullptr) != VK_SUCCESS) return;
  std::vector<VkCooperativeMatrixPropertiesNV> props(n);
  for (VkCooperativeMatrixPropertiesNV& p : props) p.sType = VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV;
  if (query(pd, &n, props.data()) != VK_SUCCESS) return;
  for (uint32_t i = 0; i < n; ++i) {
    const VkCooperativeMatrixPropertiesNV& p = props[i];
    if (p.AType == VK_COMPONENT_TYPE_FLOAT16_NV && p.BType == VK_COMPONENT_TYPE_FLOAT16_NV &&
        p.CType == VK_COMPONENT_TYPE_FLOAT32_NV && p.DType == VK_COMPONENT_TYPE_FLOAT32_NV &&
        p.scope == VK_SCOPE_SUBGROUP_NV)
      d->coopmat_f16_shapes.push_back({p.MSize, p.NSize, p.KSize});
  }
}

// What the device offers for tensor-core GEMMs, in words, for `kiln
// devices` (appended to the driver string; empty where it offers nothing).
std::string matrix_note(const DeviceInfo& d) {
  if (!d.coopmat_nv && !d.coopmat_khr && !d.coopmat2_nv && !d.bfloat16_khr) return "";
  std::string s = "; coopmat:";
  if (d.coopmat_nv) {
    s += " NV";
    if (!d.coopmat_feature) s += " (feature off)";
    if (!d.memory_model) s += " (no vulkanMemoryModel)";
    s += " f16";
    for (size_t i = 0; i < d.coopmat_f16_shapes.size(); ++i) {
      const FragmentShape& f = d.coopmat_f16_shapes[i];
      s += i == 0 ? ' ' : '/';
      s += std::to_string(f.m);
      s += 'x';
      s += std::to_string(f.n);
      s += 'x';
      s += std::to_string(f.k);
    }
  }
  s += std::string(", KHR ") + (d.coopmat_khr ? "yes" : "no") + ", NV2 " + (d.coopmat2_nv ? "yes" : "no") +
       ", shader_bfloat16 " + (d.bfloat16_khr ? "yes" : "no");
  return s;
}

DeviceInfo describe(VkPhysicalDevice pd) {
  VkPhysicalDeviceDriverProperties driver{};
  driver.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES;
  VkPhysicalDeviceSubgroupProperties subgroup{};
  subgroup.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES;
  VkPhysicalDeviceProperties2 props2{};
  props2.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2;
  VkPhysicalDeviceProperties basic{};
  vkGetPhysicalDeviceProperties(pd, &basic);
  const bool has_driver_props = basic.apiVersion >= VK_API_VERSION_1_2;
  props2.pNext = &subgroup;  // core in 1.1, which every listed device has
  if (has_driver_props) subgroup.pNext = &driver;
  vkGetPhysicalDeviceProperties2(pd, &props2);
  const VkPhysicalDeviceProperties& p = props2.properties;
  DeviceInfo d;
  d.physical = pd;
  d.name = p.deviceName;
  d.vendor_id = p.vendorID;
  d.device_id = p.deviceID;
  d.api_version = p.apiVersion;
  d.vendor = vendor_name(p.vendorID);
  d.driver_version = "Vulkan " + version_string(p.apiVersion);
  if (has_driver_props)
    d.driver_version += std::string(" ") + driver.driverName + " " + driver.driverInfo;
  else
    d.driver_version += " driver " + std::to_string(p.driverVersion);
  std::memcpy(d.pipeline_cache_uuid, p.pipelineCacheUUID, VK_UUID_SIZE);
  d.kind = kind_of(p.deviceType);
  d.max_storage_range = p.limits.maxStorageBufferRange;
  d.storage_alignment = std::max<uint64_t>(4, p.limits.minStorageBufferOffsetAlignment);
  for (int i = 0; i < 3; ++i) d.max_groups[i] = p.limits.maxComputeWorkGroupCount[i];
  d.max_storage_buffers = p.limits.maxPerStageDescriptorStorageBuffers;
  d.max_push_bytes = p.limits.maxPushConstantsSize;
  d.max_shared_bytes = p.limits.maxComputeSharedMemorySize;
  d.max_invocations = p.limits.maxComputeWorkGroupInvocations;

  d.low_precision = low_precision_features(pd, p.apiVersion);
  d.subgroup_size = subgroup.subgroupSize;
  d.subgroup_basic = (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) != 0 &&
                     (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_BASIC_BIT) != 0;
  d.subgroup_arithmetic = d.subgroup_basic && (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT) != 0;
  for (const std::string& e : extension_names(pd)) {
    if (e == "VK_NV_cooperative_matrix") d.coopmat_nv = true;
    if (e == "VK_KHR_cooperative_matrix") d.coopmat_khr = true;
    if (e == "VK_NV_cooperative_matrix2") d.coopmat2_nv = true;
    if (e == "VK_KHR_shader_bfloat16") d.bfloat16_khr = true;
  }
  if (d.coopmat_nv) query_coopmat_nv(pd, &d);
  d.driver_version += matrix_note(d);

  VkPhysicalDeviceMemoryProperties mem{};
  vkGetPhysicalDeviceMemoryProperties(pd, &mem);
  std::string heaps;
  for (uint32_t i = 0; i < mem.memoryHeapCount; ++i) {
    const VkMemoryHeap& h = mem.memoryHeaps[i];
    if (h.flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) d.memory_bytes = std::max<uint64_t>(d.memory_bytes, h.size);
    heaps += std::to_string(h.size) + "/" + std::to_string(h.flags) + ",";
  }

  uint32_t nq = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(pd, &nq, nullptr);
  std::vector<VkQueueFamilyProperties> qs(nq);
  vkGetPhysicalDeviceQueueFamilyProperties(pd, &nq, qs.data());
  d.queue_family = UINT32_MAX;
  for (uint32_t i = 0; i < nq; ++i)
    if (qs[i].queueFlags & VK_QUEUE_COMPUTE_BIT) {
      d.queue_family = i;
      break;
    }

  std::string uuid;
  for (uint8_t b : d.pipeline_cache_uuid) uuid += std::to_string(b) + ".";
  d.fingerprint = fingerprint_hex(std::to_string(p.deviceType) + "|" + std::to_string(p.vendorID) + "|" +
                                  std::to_string(p.deviceID) + "|" + d.name + "|" + std::to_string(p.driverVersion) +
                                  "|" + d.driver_version + "|" + heaps + "|" + uuid + "|" + kCompilerVersion);
  return d;
}

// Creates the instance (kept for the process) and lists the usable devices.
std::vector<DeviceInfo> enumerate(std::string* why_none) {
  std::vector<DeviceInfo> list;
  VkApplicationInfo app{};
  app.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO;
  app.pApplicationName = "kiln";
  app.pEngineName = "kiln";
  app.apiVersion = VK_API_VERSION_1_2;
  VkInstanceCreateInfo ci{};
  ci.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO;
  ci.pApplicationInfo = &app;
  VkResult r = vkCreateInstance(&ci, nullptr, &g_instance);
  if (r != VK_SUCCESS) {
    g_instance = VK_NULL_HANDLE;
    *why_none = r == VK_ERROR_INCOMPATIBLE_DRIVER
                    ? "no Vulkan driver (ICD) found: install mesa-vulkan-drivers (lavapipe) or a GPU driver, "
                      "or check VK_DRIVER_FILES/VK_ICD_FILENAMES"
                    : "creating a Vulkan instance failed: " + vk_result_name(r);
    return list;
  }
  uint32_t n = 0;
  r = vkEnumeratePhysicalDevices(g_instance, &n, nullptr);
  std::vector<VkPhysicalDevice> pds(n);
  if (r == VK_SUCCESS && n > 0) r = vkEnumeratePhysicalDevices(g_instance, &n, pds.data());
  if (r != VK_SUCCESS && r != VK_INCOMPLETE) {
    *why_none = "enumerating Vulkan devices failed: " + vk_result_name(r);
    return list;
  }
  std::string skipped;
  for (uint32_t i = 0; i < n; ++i) {
    DeviceInfo d = describe(pds[i]);
    if (d.api_version < VK_API_VERSION_1_1 || d.queue_family == UINT32_MAX) {
      skipped += (skipped.empty() ? "" : ", ") + d.name;
      continue;
    }
    list.push_back(std::move(d));
  }
  if (list.empty() && !skipped.empty())
    *why_none = "no Vulkan 1.1 device with a compute queue (skipped: " + skipped + ")";
  return list;
}

}  // namespace

kiln::plugin_kit::DeviceList<DeviceInfo>& device_list() {
  static kiln::plugin_kit::DeviceList<DeviceInfo> list(
      "vulkan", enumerate, "the Vulkan loader found no device: install mesa-vulkan-drivers (lavapipe) or a GPU driver");
  return list;
}

std::string fingerprint(const DeviceInfo& d) {
  const char* gemm = std::getenv("KILN_VULKAN_GEMM");
  if (gemm == nullptr || *gemm == '\0') return d.fingerprint;
  return fingerprint_hex(d.fingerprint + "|gemm=" + gemm);
}

GemmDevice gemm_device(const DeviceInfo& d) {
  GemmDevice g;
  g.name = d.name;
  g.cpu = d.kind == KILN_DEVICE_CPU;
  // gemm_coopmat numbers its subgroups with gl_SubgroupID: without basic
  // subgroup operations it has no subgroup to lay out (coopmat_usable).
  g.subgroup_size = d.subgroup_basic ? d.subgroup_size : 0;
  g.subgroup_arithmetic = d.subgroup_arithmetic;
  g.max_invocations = d.max_invocations;
  g.max_shared_bytes = d.max_shared_bytes;
  g.storage16 = (d.low_precision & KILN_LOWP_16BIT_STORAGE) != 0;
  g.f16_arithmetic = (d.low_precision & KILN_LOWP_F16_ARITHMETIC) != 0;
  g.coopmat_extension = d.coopmat_nv;
  g.coopmat_feature = d.coopmat_feature;
  g.memory_model = d.memory_model;
  g.f16_shapes = d.coopmat_f16_shapes;
  return g;
}

VkInstance instance() {
  device_list().all();
  return g_instance;
}

LogicalDevice::LogicalDevice(const DeviceInfo& info) {
  const float priority = 1.0f;
  VkDeviceQueueCreateInfo q{};
  q.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO;
  q.queueFamilyIndex = info.queue_family;
  q.queueCount = 1;
  q.pQueuePriorities = &priority;
  VkDeviceCreateInfo ci{};
  ci.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO;
  ci.queueCreateInfoCount = 1;
  ci.pQueueCreateInfos = &q;
  // bf16/f16 values are read and written as 16-bit buffer elements
  // (convert16.comp): enabled where the device has it.
  VkPhysicalDevice16BitStorageFeatures storage{};
  storage.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES;
  if ((info.low_precision & KILN_LOWP_16BIT_STORAGE) != 0) {
    storage.storageBuffer16BitAccess = VK_TRUE;
    ci.pNext = &storage;
  }
  // gemm_coopmat16's fragments, f16 shared memory and memory model: the
  // extension, its feature, shaderFloat16 and vulkanMemoryModel, enabled
  // wherever the device has all four (enabling them changes nothing for
  // the other shaders), so compile and runtime devices agree whatever the
  // lowering chose.
  VkPhysicalDeviceCooperativeMatrixFeaturesNV coop{};
  coop.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV;
  VkPhysicalDeviceShaderFloat16Int8Features float16{};
  float16.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES;
  VkPhysicalDeviceVulkanMemoryModelFeatures model{};
  model.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES;
  const char* coop_extension = "VK_NV_cooperative_matrix";
  if (info.coopmat_feature && info.memory_model && (info.low_precision & KILN_LOWP_F16_ARITHMETIC) != 0) {
    coop.cooperativeMatrix = VK_TRUE;
    float16.shaderFloat16 = VK_TRUE;
    model.vulkanMemoryModel = VK_TRUE;
    float16.pNext = &coop;
    coop.pNext = &model;
    model.pNext = const_cast<void*>(ci.pNext);
    ci.pNext = &float16;
    ci.enabledExtensionCount = 1;
    ci.ppEnabledExtensionNames = &coop_extension;
  }
  vk_check(vkCreateDevice(info.physical, &ci, nullptr, &device), "vkCreateDevice on " + info.name);
  vkGetDeviceQueue(device, info.queue_family, 0, &queue);
}

LogicalDevice::~LogicalDevice() {
  if (device != VK_NULL_HANDLE) {
    vkDeviceWaitIdle(device);
    vkDestroyDevice(device, nullptr);
  }
}

uint64_t binding_window_limit(const DeviceInfo& d) {
  uint64_t range = std::min<uint64_t>(d.max_storage_range, 0xFFFFFFFFull);
  if (const char* env = std::getenv("KILN_VULKAN_MAX_BINDING_BYTES"); env != nullptr && *env != '\0') {
    const uint64_t v = std::strtoull(env, nullptr, 10);
    if (v >= 512) range = std::min(range, v);
  }
  return (range - std::min(range, d.storage_alignment)) & ~uint64_t{3};
}

}  // namespace kiln::vk
