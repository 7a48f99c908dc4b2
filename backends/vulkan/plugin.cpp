// libkiln-backend-vulkan.so: the kiln plugin ABI (kiln/plugin.h) over
// Vulkan 1.1+ compute.
//
// compile: decode + check the IR, lower every node to dispatches of the
// embedded SPIR-V shaders (lowering.cpp), build the pipelines once on a
// device of its own to fill a VkPipelineCache, and store SPIR-V, schedule
// and cache data in the executable bytes. load: check the pipeline-cache
// header against this device (a foreign or corrupt blob is dropped with a
// warning) and build the pipelines from it. execute: one command buffer per
// graph, pipeline barriers only between dependent dispatches; descriptor
// sets and the recorded command buffer are reused while the same buffers
// are bound. It returns once submitted, except for graphs with index checks
// (embedding, cross entropy), which wait to read the error flag.
//
// Nothing may throw across the C boundary: every entry point runs inside
// guarded(), which turns exceptions into kiln_error objects.

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "executable.h"
#include "lowering.h"
#include "pipelines.h"
#include "runtime.h"
#include "shaders.h"
#include "version.h"

using kiln::vk::fail;

struct kiln_error {
  int32_t code;
  std::string message;
};

struct kiln_device {
  std::unique_ptr<kiln::vk::Runtime> rt;
  // KILN_VULKAN_PROFILE=1: every dispatch is submitted and waited for on
  // its own and timed; a table of time per shader goes to stderr at close.
  bool profile = false;
  std::map<std::string, std::pair<double, uint64_t>> times;  // shader -> (seconds, dispatches)
  ~kiln_device() {
    if (!profile) return;
    std::vector<std::pair<std::string, std::pair<double, uint64_t>>> rows(times.begin(), times.end());
    std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
    double total = 0.0;
    for (const auto& r : rows) total += r.second.first;
    std::fprintf(stderr, "kiln vulkan profile: %.3f s in dispatches\n", total);
    for (const auto& [name, t] : rows)
      std::fprintf(stderr, "  %9.3f s %5.1f%% %8llu dispatches  %s\n", t.first,
                   total > 0 ? 100.0 * t.first / total : 0.0, static_cast<unsigned long long>(t.second), name.c_str());
  }
};

struct kiln_buffer {
  kiln::vk::DeviceBuffer b;
};

struct kiln_loaded_executable {
  kiln_device* device = nullptr;
  kiln::vk::Schedule schedule;
  std::unique_ptr<kiln::vk::PipelineSet> pipelines;
  bool cache_dropped = false;
  VkDescriptorPool pool = VK_NULL_HANDLE;
  std::vector<VkDescriptorSet> sets;  // one per dispatch, reused
  VkCommandBuffer cb = VK_NULL_HANDLE;
  VkFence fence = VK_NULL_HANDLE;      // signalled when the last submission ended
  std::vector<VkBuffer> recorded_for;  // slot buffers the command buffer was recorded with
  bool recorded = false;
  kiln::vk::DeviceBuffer scratch, flag;

  ~kiln_loaded_executable() {
    if (device == nullptr) return;
    kiln::vk::Runtime& rt = *device->rt;
    VkDevice d = rt.device();
    if (fence != VK_NULL_HANDLE) {
      vkWaitForFences(d, 1, &fence, VK_TRUE, UINT64_MAX);
      vkDestroyFence(d, fence, nullptr);
    }
    if (cb != VK_NULL_HANDLE) vkFreeCommandBuffers(d, rt.pool(), 1, &cb);
    if (pool != VK_NULL_HANDLE) vkDestroyDescriptorPool(d, pool, nullptr);
    rt.destroy_buffer(scratch);
    rt.destroy_buffer(flag);
  }
};

namespace {

using kiln::vk::Failure;

kiln_error* static_oom_error() {
  static kiln_error oom{KILN_ERR_OUT_OF_MEMORY, "out of host memory"};
  return &oom;
}

kiln_error* make_error(int32_t code, std::string message) {
  try {
    return new kiln_error{code, std::move(message)};
  } catch (...) {
    return static_oom_error();
  }
}

template <class F>
kiln_error* guarded(F&& f) {
  try {
    f();
    return nullptr;
  } catch (const Failure& e) {
    return make_error(e.code, e.message);
  } catch (const std::bad_alloc&) {
    return make_error(KILN_ERR_OUT_OF_MEMORY, "out of host memory");
  } catch (const std::exception& e) {
    return make_error(KILN_ERR_INTERNAL, e.what());
  } catch (...) {
    return make_error(KILN_ERR_INTERNAL, "unknown exception in the vulkan backend");
  }
}

template <class Args>
void check_args(const Args* args, const char* what, size_t min_size = sizeof(Args)) {
  if (args == nullptr) fail(KILN_ERR_INVALID_ARGUMENT, std::string(what) + ": args is NULL");
  if (args->struct_size < min_size)
    fail(KILN_ERR_INVALID_ARGUMENT, std::string(what) + ": args struct_size " + std::to_string(args->struct_size) +
                                        " is smaller than " + std::to_string(min_size));
}

void copy_str(char* dst, size_t cap, const std::string& s) {
  size_t n = std::min(cap - 1, s.size());
  std::memcpy(dst, s.data(), n);
  dst[n] = '\0';
}

// ---------------------------------------------------------------- ABI functions

void error_destroy(kiln_error* e) {
  if (e != nullptr && e != static_oom_error()) delete e;
}
const char* error_message(const kiln_error* e) { return e ? e->message.c_str() : ""; }
int32_t error_code(const kiln_error* e) { return e ? e->code : KILN_OK; }
const char* compiler_version() { return kiln::vk::kCompilerVersion; }

kiln_error* device_count(kiln_device_count_args* args) {
  return guarded([&] {
    check_args(args, "device_count", offsetof(kiln_device_count_args, no_devices_reason));
    args->count = static_cast<int32_t>(kiln::vk::devices().size());
    if (args->count == 0 && KILN_STRUCT_HAS(kiln_device_count_args, args, no_devices_reason))
      copy_str(args->no_devices_reason, sizeof(args->no_devices_reason), kiln::vk::no_devices_reason());
  });
}

kiln_error* device_properties(kiln_device_properties_args* args) {
  return guarded([&] {
    check_args(args, "device_properties");
    const kiln::vk::DeviceInfo& d = kiln::vk::device_at(args->device_index);
    kiln_device_properties* out = args->properties;
    if (out == nullptr || out->struct_size < sizeof(size_t))
      fail(KILN_ERR_INVALID_ARGUMENT, "device_properties: properties is NULL or has no struct_size");
    kiln_device_properties p{};
    copy_str(p.name, sizeof(p.name), d.name);
    copy_str(p.vendor, sizeof(p.vendor), d.vendor);
    copy_str(p.driver_version, sizeof(p.driver_version), d.driver_version);
    p.kind = d.kind;
    p.memory_bytes = d.memory_bytes;
    p.compute_units = 0;
    copy_str(p.fingerprint, sizeof(p.fingerprint), d.fingerprint);
    const size_t host_size = out->struct_size;
    p.struct_size = host_size;
    std::memcpy(out, &p, std::min(host_size, sizeof(p)));
  });
}

kiln_error* device_open(kiln_device_open_args* args) {
  return guarded([&] {
    check_args(args, "device_open");
    const kiln::vk::DeviceInfo& d = kiln::vk::device_at(args->device_index);
    auto dev = std::make_unique<kiln_device>();
    dev->rt = std::make_unique<kiln::vk::Runtime>(d);
    const char* profile = std::getenv("KILN_VULKAN_PROFILE");
    dev->profile = profile != nullptr && *profile != '\0' && std::strcmp(profile, "0") != 0;
    args->device = dev.release();
  });
}

void device_close(kiln_device* device) { delete device; }

kiln_error* buffer_alloc(kiln_buffer_alloc_args* args) {
  return guarded([&] {
    check_args(args, "buffer_alloc");
    if (args->device == nullptr) fail(KILN_ERR_INVALID_ARGUMENT, "buffer_alloc: device is NULL");
    std::lock_guard<std::mutex> lock(args->device->rt->mutex);
    auto b = std::make_unique<kiln_buffer>();
    b->b = args->device->rt->create_buffer(args->size_bytes);
    args->buffer = b.release();
  });
}

void buffer_free(kiln_device* device, kiln_buffer* buffer) {
  if (buffer == nullptr || device == nullptr) return;
  std::lock_guard<std::mutex> lock(device->rt->mutex);
  // The memory may still be in use by a submitted graph.
  vkQueueWaitIdle(device->rt->queue());
  device->rt->destroy_buffer(buffer->b);
  delete buffer;
}

void check_range(const char* what, const kiln_buffer* b, uint64_t offset, uint64_t size) {
  if (b == nullptr) fail(KILN_ERR_INVALID_ARGUMENT, std::string(what) + ": buffer is NULL");
  if (offset > b->b.size || size > b->b.size - offset)
    fail(KILN_ERR_INVALID_ARGUMENT, std::string(what) + ": " + std::to_string(size) + " bytes at offset " +
                                        std::to_string(offset) + " overrun a buffer of " + std::to_string(b->b.size) +
                                        " bytes");
}

kiln_error* buffer_write(kiln_buffer_transfer_args* args) {
  return guarded([&] {
    check_args(args, "buffer_write");
    if (args->device == nullptr) fail(KILN_ERR_INVALID_ARGUMENT, "buffer_write: device is NULL");
    check_range("buffer_write", args->buffer, args->offset, args->size_bytes);
    if (args->size_bytes == 0) return;
    if (args->host == nullptr) fail(KILN_ERR_INVALID_ARGUMENT, "buffer_write: host is NULL");
    std::lock_guard<std::mutex> lock(args->device->rt->mutex);
    args->device->rt->write(args->buffer->b, args->offset, args->host, args->size_bytes);
  });
}

kiln_error* buffer_read(kiln_buffer_transfer_args* args) {
  return guarded([&] {
    check_args(args, "buffer_read");
    if (args->device == nullptr) fail(KILN_ERR_INVALID_ARGUMENT, "buffer_read: device is NULL");
    check_range("buffer_read", args->buffer, args->offset, args->size_bytes);
    if (args->size_bytes == 0) return;
    if (args->host == nullptr) fail(KILN_ERR_INVALID_ARGUMENT, "buffer_read: host is NULL");
    std::lock_guard<std::mutex> lock(args->device->rt->mutex);
    args->device->rt->read(args->buffer->b, args->offset, args->host, args->size_bytes);
  });
}

kiln_error* buffer_copy(kiln_buffer_copy_args* args) {
  return guarded([&] {
    check_args(args, "buffer_copy");
    if (args->device == nullptr) fail(KILN_ERR_INVALID_ARGUMENT, "buffer_copy: device is NULL");
    check_range("buffer_copy (source)", args->src, args->src_offset, args->size_bytes);
    check_range("buffer_copy (destination)", args->dst, args->dst_offset, args->size_bytes);
    if (args->size_bytes == 0) return;
    std::lock_guard<std::mutex> lock(args->device->rt->mutex);
    args->device->rt->copy(args->src->b, args->src_offset, args->dst->b, args->dst_offset, args->size_bytes);
  });
}

std::vector<uint8_t> pipeline_cache_data(VkDevice device, VkPipelineCache cache) {
  size_t size = 0;
  kiln::vk::vk_check(vkGetPipelineCacheData(device, cache, &size, nullptr), "vkGetPipelineCacheData");
  std::vector<uint8_t> data(size);
  if (size > 0) kiln::vk::vk_check(vkGetPipelineCacheData(device, cache, &size, data.data()), "vkGetPipelineCacheData");
  data.resize(size);
  return data;
}

struct ScopedCache {
  VkDevice device;
  VkPipelineCache cache = VK_NULL_HANDLE;
  ScopedCache(VkDevice d, const std::vector<uint8_t>& initial) : device(d) {
    VkPipelineCacheCreateInfo ci{};
    ci.sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO;
    ci.initialDataSize = initial.size();
    ci.pInitialData = initial.empty() ? nullptr : initial.data();
    kiln::vk::vk_check(vkCreatePipelineCache(d, &ci, nullptr, &cache), "vkCreatePipelineCache");
  }
  ~ScopedCache() { vkDestroyPipelineCache(device, cache, nullptr); }
  ScopedCache(const ScopedCache&) = delete;
  ScopedCache& operator=(const ScopedCache&) = delete;
};

kiln_error* compile(kiln_compile_args* args) {
  return guarded([&] {
    check_args(args, "compile");
    const kiln::vk::DeviceInfo& d = kiln::vk::device_at(args->device_index);
    kiln::ir::DecodedGraph g;
    kiln::backend::decode_ir(args->ir, args->ir_size, &g, "vulkan");
    kiln::backend::require_supported(g, kiln::vk::kSupported);
    kiln::backend::require_32bit_storage(g, kiln::vk::kSupported.backend);
    const std::vector<kiln::backend::NodeInfo> info = kiln::backend::analyze(g);
    kiln::vk::ExecutableImage image;
    image.compiler_version = kiln::vk::kCompilerVersion;
    image.fingerprint = d.fingerprint;
    image.device_name = d.name;
    image.schedule = kiln::vk::lower(g, info, d);
    for (const std::string& name : image.schedule.shaders) image.spirv.push_back(kiln::vk::embedded_spirv(name));
    if (!image.schedule.pipelines.empty()) {
      // Build every pipeline once so the driver's cache holds them.
      kiln::vk::LogicalDevice ld(d);
      ScopedCache cache(ld.device, {});
      kiln::vk::PipelineSet set(ld.device, image.spirv, image.schedule.pipelines, cache.cache);
      image.pipeline_cache = pipeline_cache_data(ld.device, cache.cache);
    }
    const std::vector<uint8_t> bytes = kiln::vk::encode_executable(image);
    auto* out = static_cast<uint8_t*>(std::malloc(std::max<size_t>(bytes.size(), 1)));
    if (out == nullptr) throw std::bad_alloc();
    std::memcpy(out, bytes.data(), bytes.size());
    args->executable = out;
    args->executable_size = bytes.size();
  });
}

void executable_bytes_free(uint8_t* bytes) { std::free(bytes); }

kiln_error* load(kiln_load_args* args) {
  return guarded([&] {
    check_args(args, "load");
    kiln_device* dev = args->device;
    if (dev == nullptr) fail(KILN_ERR_INVALID_ARGUMENT, "load: device is NULL");
    if (args->executable == nullptr) fail(KILN_ERR_INVALID_ARGUMENT, "load: executable is NULL");
    kiln::vk::Runtime& rt = *dev->rt;
    kiln::vk::ExecutableImage image = kiln::vk::decode_executable(args->executable, args->executable_size);
    for (size_t i = 0; i < image.spirv.size(); ++i)
      if (!kiln::vk::looks_like_spirv(image.spirv[i]))
        fail(KILN_ERR_CORRUPT, "vulkan executable: shader " + image.schedule.shaders[i] + " is not SPIR-V");
    std::lock_guard<std::mutex> lock(rt.mutex);
    auto exe = std::make_unique<kiln_loaded_executable>();
    exe->device = dev;
    exe->schedule = std::move(image.schedule);
    const kiln::vk::Schedule& s = exe->schedule;
    VkDevice d = rt.device();
    if (!s.pipelines.empty()) {
      // The driver is never handed a pipeline cache made elsewhere or
      // damaged: the header must name this device and driver and the data
      // must match its checksum. Otherwise the pipelines are rebuilt.
      std::vector<uint8_t> initial;
      const std::string problem = kiln::vk::pipeline_cache_problem(image, rt.info());
      if (problem.empty()) {
        initial = std::move(image.pipeline_cache);
      } else {
        exe->cache_dropped = true;
        kiln::vk::warn("dropping the executable's pipeline cache (" + problem + "); rebuilding its pipelines");
      }
      ScopedCache cache(d, initial);
      exe->pipelines = std::make_unique<kiln::vk::PipelineSet>(d, image.spirv, s.pipelines, cache.cache);
    }
    if (!s.dispatches.empty()) {
      VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                static_cast<uint32_t>(s.dispatches.size() * kiln::vk::kMaxBindings)};
      VkDescriptorPoolCreateInfo pi{};
      pi.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO;
      pi.maxSets = static_cast<uint32_t>(s.dispatches.size());
      pi.poolSizeCount = 1;
      pi.pPoolSizes = &size;
      kiln::vk::vk_check(vkCreateDescriptorPool(d, &pi, nullptr, &exe->pool), "vkCreateDescriptorPool");
      std::vector<VkDescriptorSetLayout> layouts(s.dispatches.size(), exe->pipelines->set_layout());
      VkDescriptorSetAllocateInfo ai{};
      ai.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO;
      ai.descriptorPool = exe->pool;
      ai.descriptorSetCount = static_cast<uint32_t>(layouts.size());
      ai.pSetLayouts = layouts.data();
      exe->sets.resize(layouts.size());
      kiln::vk::vk_check(vkAllocateDescriptorSets(d, &ai, exe->sets.data()), "vkAllocateDescriptorSets");
    }
    VkCommandBufferAllocateInfo ci{};
    ci.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
    ci.commandPool = rt.pool();
    ci.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    ci.commandBufferCount = 1;
    kiln::vk::vk_check(vkAllocateCommandBuffers(d, &ci, &exe->cb), "vkAllocateCommandBuffers");
    VkFenceCreateInfo fi{};
    fi.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
    fi.flags = VK_FENCE_CREATE_SIGNALED_BIT;
    kiln::vk::vk_check(vkCreateFence(d, &fi, nullptr, &exe->fence), "vkCreateFence");
    if (s.scratch_bytes > 0) exe->scratch = rt.create_buffer(s.scratch_bytes);
    if (!s.checks.empty()) exe->flag = rt.create_buffer(4);
    args->loaded = exe.release();
  });
}

void loaded_free(kiln_device*, kiln_loaded_executable* loaded) {
  if (loaded == nullptr) return;
  std::lock_guard<std::mutex> lock(loaded->device->rt->mutex);
  delete loaded;
}

// Points every dispatch's descriptor set at the bound buffers and records
// the command buffer: the fill of the error flag, then every dispatch with
// a pipeline barrier where lowering placed one.
void record(kiln_loaded_executable* exe, kiln_buffer* const* slots, size_t only = SIZE_MAX) {
  kiln::vk::Runtime& rt = *exe->device->rt;
  const kiln::vk::Schedule& s = exe->schedule;
  const uint64_t align = rt.info().storage_alignment;
  VkDevice d = rt.device();
  std::vector<std::vector<uint32_t>> pushes(s.dispatches.size());
  for (size_t i = 0; i < s.dispatches.size(); ++i) {
    const kiln::vk::Dispatch& dp = s.dispatches[i];
    VkDescriptorBufferInfo infos[kiln::vk::kMaxBindings]{};
    VkWriteDescriptorSet writes[kiln::vk::kMaxBindings]{};
    pushes[i] = dp.push;
    for (size_t k = 0; k < dp.bindings.size(); ++k) {
      const kiln::vk::Binding& b = dp.bindings[k];
      VkBuffer buf = VK_NULL_HANDLE;
      switch (b.ref.mem) {
        case kiln::vk::Mem::Slot: buf = slots[b.ref.slot]->b.buffer; break;
        case kiln::vk::Mem::Scratch: buf = exe->scratch.buffer; break;
        case kiln::vk::Mem::Flag: buf = exe->flag.buffer; break;
      }
      const uint64_t start = b.ref.offset / align * align;
      infos[k] = {buf, start, b.bytes + (b.ref.offset - start)};
      pushes[i][k] = static_cast<uint32_t>((b.ref.offset - start) / 4);
      writes[k].sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET;
      writes[k].dstSet = exe->sets[i];
      writes[k].dstBinding = static_cast<uint32_t>(k);
      writes[k].descriptorCount = 1;
      writes[k].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      writes[k].pBufferInfo = &infos[k];
    }
    vkUpdateDescriptorSets(d, static_cast<uint32_t>(dp.bindings.size()), writes, 0, nullptr);
  }

  VkCommandBuffer cb = exe->cb;
  kiln::vk::vk_check(vkResetCommandBuffer(cb, 0), "vkResetCommandBuffer");
  VkCommandBufferBeginInfo bi{};
  bi.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
  kiln::vk::vk_check(vkBeginCommandBuffer(cb, &bi), "vkBeginCommandBuffer");
  VkMemoryBarrier mb{};
  mb.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
  if (exe->flag.buffer != VK_NULL_HANDLE && (only == SIZE_MAX || only == 0))
    vkCmdFillBuffer(cb, exe->flag.buffer, 0, 4, INT32_MAX);
  // Earlier submissions (transfers, other graphs) before the first dispatch.
  mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_HOST_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
  vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &mb, 0,
                       nullptr, 0, nullptr);
  uint32_t bound = UINT32_MAX;
  for (size_t i = 0; i < s.dispatches.size(); ++i) {
    if (only != SIZE_MAX && i != only) continue;
    const kiln::vk::Dispatch& dp = s.dispatches[i];
    if (dp.barrier) {
      mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
      mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
      vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &mb, 0,
                           nullptr, 0, nullptr);
    }
    if (dp.pipeline != bound) {
      vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, exe->pipelines->pipeline(dp.pipeline));
      bound = dp.pipeline;
    }
    vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, exe->pipelines->layout(), 0, 1, &exe->sets[i], 0,
                            nullptr);
    vkCmdPushConstants(cb, exe->pipelines->layout(), VK_SHADER_STAGE_COMPUTE_BIT, 0,
                       static_cast<uint32_t>(pushes[i].size() * 4), pushes[i].data());
    vkCmdDispatch(cb, dp.groups[0], dp.groups[1], dp.groups[2]);
  }
  // Results visible to transfers and host reads that follow.
  mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT | VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                       VK_PIPELINE_STAGE_HOST_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &mb, 0, nullptr, 0, nullptr);
  kiln::vk::vk_check(vkEndCommandBuffer(cb), "vkEndCommandBuffer");
}

kiln_error* execute(kiln_execute_args* args) {
  return guarded([&] {
    check_args(args, "execute");
    kiln_device* dev = args->device;
    kiln_loaded_executable* exe = args->loaded;
    if (dev == nullptr || exe == nullptr) fail(KILN_ERR_INVALID_ARGUMENT, "execute: device or executable is NULL");
    if (exe->device != dev) fail(KILN_ERR_INVALID_ARGUMENT, "execute: the executable was loaded on another device");
    const kiln::vk::Schedule& s = exe->schedule;
    if (args->num_slots < 0 || static_cast<uint32_t>(args->num_slots) < s.num_slots)
      fail(KILN_ERR_INVALID_ARGUMENT, "execute: the graph addresses " + std::to_string(s.num_slots) + " slots, " +
                                          std::to_string(args->num_slots) + " bound");
    if (args->slots == nullptr && s.num_slots > 0) fail(KILN_ERR_INVALID_ARGUMENT, "execute: slots is NULL");
    std::vector<VkBuffer> key(s.num_slots, VK_NULL_HANDLE);
    for (uint32_t i = 0; i < s.num_slots; ++i) {
      if (s.slot_bytes[i] == 0) continue;
      const kiln_buffer* b = args->slots[i];
      if (b == nullptr) fail(KILN_ERR_INVALID_ARGUMENT, "execute: slot " + std::to_string(i) + " is not bound");
      if (b->b.size < s.slot_bytes[i])
        fail(KILN_ERR_INVALID_ARGUMENT, "execute: slot " + std::to_string(i) + " holds " + std::to_string(b->b.size) +
                                            " bytes; the graph needs " + std::to_string(s.slot_bytes[i]));
      key[i] = b->b.buffer;
    }
    if (s.dispatches.empty()) return;
    kiln::vk::Runtime& rt = *dev->rt;
    std::lock_guard<std::mutex> lock(rt.mutex);
    VkDevice d = rt.device();
    // The command buffer and descriptor sets may still be in use by the
    // previous run of this executable.
    kiln::vk::vk_check(vkWaitForFences(d, 1, &exe->fence, VK_TRUE, UINT64_MAX), "vkWaitForFences");
    if (dev->profile) {
      // Each dispatch alone, waited for and timed (the flag is reset with
      // the first one only, so checks still work).
      for (size_t i = 0; i < s.dispatches.size(); ++i) {
        record(exe, args->slots, i);
        const auto t0 = std::chrono::steady_clock::now();
        kiln::vk::vk_check(vkResetFences(d, 1, &exe->fence), "vkResetFences");
        VkSubmitInfo si{};
        si.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
        si.commandBufferCount = 1;
        si.pCommandBuffers = &exe->cb;
        kiln::vk::vk_check(vkQueueSubmit(rt.queue(), 1, &si, exe->fence), "vkQueueSubmit");
        kiln::vk::vk_check(vkWaitForFences(d, 1, &exe->fence, VK_TRUE, UINT64_MAX), "vkWaitForFences");
        auto& t = dev->times[s.shaders[s.pipelines[s.dispatches[i].pipeline].shader]];
        t.first += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        t.second += 1;
      }
      exe->recorded = false;
    } else if (!exe->recorded || key != exe->recorded_for) {
      exe->recorded = false;
      record(exe, args->slots);
      exe->recorded_for = key;
      exe->recorded = true;
    }
    if (!dev->profile) {
      kiln::vk::vk_check(vkResetFences(d, 1, &exe->fence), "vkResetFences");
      VkSubmitInfo si{};
      si.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
      si.commandBufferCount = 1;
      si.pCommandBuffers = &exe->cb;
      kiln::vk::vk_check(vkQueueSubmit(rt.queue(), 1, &si, exe->fence), "vkQueueSubmit");
    }
    if (s.checks.empty()) return;
    int32_t failed = INT32_MAX;
    rt.read(exe->flag, 0, &failed, sizeof(failed));
    if (failed != INT32_MAX) {
      const auto i = static_cast<size_t>(failed);
      fail(KILN_ERR_INVALID_ARGUMENT, i < s.checks.size() ? s.checks[i] : "a shader reported a bad index");
    }
  });
}

kiln_error* synchronize(kiln_device* device) {
  return guarded([&] {
    if (device == nullptr) fail(KILN_ERR_INVALID_ARGUMENT, "synchronize: device is NULL");
    std::lock_guard<std::mutex> lock(device->rt->mutex);
    device->rt->wait_idle();
  });
}

kiln_error* op_supported(kiln_op_supported_args* args) {
  return guarded([&] {
    check_args(args, "op_supported");
    args->supported = kiln::vk::kSupported.contains(args->op) ? 1 : 0;
  });
}

const kiln_plugin_api kApi = {
    sizeof(kiln_plugin_api),
    KILN_ABI_MAJOR,
    KILN_ABI_MINOR,
    "vulkan",
    error_destroy,
    error_message,
    error_code,
    compiler_version,
    device_count,
    device_properties,
    device_open,
    device_close,
    buffer_alloc,
    buffer_free,
    buffer_write,
    buffer_read,
    buffer_copy,
    compile,
    executable_bytes_free,
    load,
    loaded_free,
    execute,
    synchronize,
    op_supported,
    nullptr,  // op_supported_node (ABI 1.2): the per-op answer holds for every shape
};

}  // namespace

extern "C" __attribute__((visibility("default"))) const kiln_plugin_api* kiln_plugin_get_api(void) { return &kApi; }

// Cheap by contract: no instance is created here (drivers can take long to
// initialise). The plugin links the Vulkan loader, so reaching this function
// means libvulkan loaded; whether any device exists is device_count's
// question, answered with 0 devices and a reason rather than a refusal.
extern "C" __attribute__((visibility("default"))) int kiln_plugin_probe(char* reason, size_t reason_size) {
  if (reason != nullptr && reason_size > 0) reason[0] = '\0';
  return 1;
}
