// libkiln-backend-vulkan.so: the kiln plugin ABI (kiln/plugin.h) over
// Vulkan 1.1+ compute.
//
// compile: decode + check the IR, lower every node to dispatches of the
// embedded SPIR-V shaders (lowering.cpp), build the pipelines once on a
// device of its own to fill a VkPipelineCache, store SPIR-V, schedule and
// cache data in the executable bytes, and, for kiln precompile, run them
// once on zeroed buffers (run_once: drivers that compile at the first
// dispatch do it then). load: check the pipeline-cache header against this
// device (a foreign or corrupt blob is dropped with a warning) and build the
// pipelines from it. execute: one command buffer per graph, pipeline
// barriers only between dependent dispatches; descriptor sets and the
// recorded command buffer are reused while the same buffers are bound. It
// returns once submitted, except for graphs with index checks (embedding,
// cross entropy), which wait to read the error flag.
//
// The C boundary (argument checks, errors, the function table, the
// executable container) is the plugin kit's (kiln/plugin_kit.hpp): this file
// is the device part, the VulkanPlugin class at the end.

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "attention_node.h"
#include "attention_plan.h"
#include "compile_options.h"
#include "executable.h"
#include "lowering.h"
#include "pipelines.h"
#include "runtime.h"
#include "shaders.h"
#include "version.h"

using kiln::vk::fail;

struct kiln_device {
  std::unique_ptr<kiln::vk::Runtime> rt;
  // KILN_VULKAN_PROFILE=1: every dispatch is submitted and waited for on
  // its own and timed; a table of time per shader goes to stderr at close.
  bool profile = false;
  kiln::plugin_kit::ProfileTable times;
  ~kiln_device() {
    if (profile) times.print(stderr, "kiln vulkan profile", "dispatches");
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

// bf16/f16 values are read and written as 16-bit buffer elements
// (convert16.comp): a device without storageBuffer16BitAccess refuses a
// graph holding one at compile, before any work, with the reason.
void require_16bit_storage(const kiln::ir::DecodedGraph& g, const kiln::vk::DeviceInfo& d) {
  if ((d.low_precision & KILN_LOWP_16BIT_STORAGE) != 0) return;
  for (size_t v = 0; v < g.values.size(); ++v) {
    const kiln_dtype dt = g.values[v].dtype;
    if (dt != KILN_BF16 && dt != KILN_F16) continue;
    std::string why = "value " + std::to_string(v) + " is " + kiln_dtype_name(dt) + ": vulkan device ";
    why += d.name;
    why += " lacks storageBuffer16BitAccess (VK_KHR_16bit_storage), which 16-bit storage needs";
    fail(KILN_ERR_UNSUPPORTED, why);
  }
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
    const kiln::vk::Pipeline& pipe = s.pipelines[dp.pipeline];
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
      // In the binding's elements: 2 bytes for a bf16/f16 binding.
      pushes[i][k] = static_cast<uint32_t>((b.ref.offset - start) / (pipe.dtype(k) != 0 ? 2 : 4));
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

// The device part; the kit (kiln/plugin_kit.hpp) makes the C entry points.
struct VulkanPlugin {
  static constexpr const char* kName = "vulkan";
  static constexpr const char* kCompilerVersion = kiln::vk::kCompilerVersion;

  static int32_t device_count() { return kiln::vk::device_list().count(); }
  static std::string no_devices_reason() { return kiln::vk::device_list().why_none(); }

  static kiln::plugin_kit::DeviceProperties device_properties(int32_t index) {
    const kiln::vk::DeviceInfo& d = kiln::vk::device_list().at(index);
    return {d.name, d.vendor, d.driver_version, d.kind, d.memory_bytes, 0, kiln::vk::fingerprint(d), d.low_precision};
  }

  static kiln_device* device_open(int32_t index, int32_t) {
    const kiln::vk::DeviceInfo& d = kiln::vk::device_list().at(index);
    auto dev = std::make_unique<kiln_device>();
    dev->rt = std::make_unique<kiln::vk::Runtime>(d);
    dev->profile = kiln::plugin_kit::env_flag("KILN_VULKAN_PROFILE");
    return dev.release();
  }

  static kiln_buffer* buffer_alloc(kiln_device* device, uint64_t size) {
    std::lock_guard<std::mutex> lock(device->rt->mutex);
    auto b = std::make_unique<kiln_buffer>();
    b->b = device->rt->create_buffer(size);
    return b.release();
  }
  static void buffer_free(kiln_device* device, kiln_buffer* buffer) {
    if (device == nullptr) return;
    std::lock_guard<std::mutex> lock(device->rt->mutex);
    // The memory may still be in use by a submitted graph.
    vkQueueWaitIdle(device->rt->queue());
    device->rt->destroy_buffer(buffer->b);
    delete buffer;
  }
  static uint64_t buffer_size(const kiln_buffer* b) { return b->b.size; }
  static void buffer_write(kiln_device* dev, kiln_buffer* b, uint64_t offset, const void* host, uint64_t size) {
    std::lock_guard<std::mutex> lock(dev->rt->mutex);
    dev->rt->write(b->b, offset, host, size);
  }
  static void buffer_read(kiln_device* dev, kiln_buffer* b, uint64_t offset, void* host, uint64_t size) {
    std::lock_guard<std::mutex> lock(dev->rt->mutex);
    dev->rt->read(b->b, offset, host, size);
  }
  static void buffer_copy(kiln_device* dev, kiln_buffer* src, uint64_t src_offset, kiln_buffer* dst,
                          uint64_t dst_offset, uint64_t size) {
    std::lock_guard<std::mutex> lock(dev->rt->mutex);
    dev->rt->copy(src->b, src_offset, dst->b, dst_offset, size);
  }

  // Decode + check the IR, lower every node to dispatches and build the
  // pipelines once on a device of its own to fill a VkPipelineCache.
  static std::vector<uint8_t> compile(const kiln_compile_args& args) {
    const kiln::vk::DeviceInfo& d = kiln::vk::device_list().at(args.device_index);
    kiln::ir::DecodedGraph g;
    kiln::backend::decode_ir(args.ir, args.ir_size, &g, "vulkan");
    kiln::backend::require_supported(g, kiln::vk::kSupported);
    require_16bit_storage(g, d);
    const std::vector<kiln::backend::NodeInfo> info = kiln::backend::analyze(g);
    kiln::vk::ExecutableImage image;
    image.stamp = {kiln::vk::kCompilerVersion, kiln::vk::fingerprint(d), d.name};
    image.schedule = kiln::vk::lower(g, info, d);
    for (const std::string& name : image.schedule.shaders) image.spirv.push_back(kiln::vk::embedded_spirv(name));
    if (!image.schedule.pipelines.empty()) {
      // Build every pipeline once so the driver's cache holds them.
      kiln::vk::LogicalDevice ld(d);
      ScopedCache cache(ld.device, {});
      kiln::vk::PipelineSet set(ld.device, image.spirv, image.schedule.pipelines, cache.cache);
      image.pipeline_cache = pipeline_cache_data(ld.device, cache.cache);
    }
    std::vector<uint8_t> bytes = kiln::vk::encode_executable(image);
    if (kiln::backend::parse_compile_options(args.options).ahead_of_time && !image.schedule.dispatches.empty())
      run_once(args.device_index, bytes);
    return bytes;
  }

  // Some drivers compile a pipeline's machine code at its first dispatch
  // (lavapipe: llvmpipe's shader variants), which no VkPipelineCache holds
  // but their own disk cache does (compiler_cache/driver_caches.h points it
  // into kiln's cache directory). Running the executable once here, on
  // zeroed buffers of its slots' sizes, makes the driver compile and store
  // them at precompile rather than in the first step. Results are dropped;
  // an index check failing on the zeros is no error here. Only ahead of
  // time: on a cache miss in training the first step is that run, and
  // running twice would double every compile-and-run (the test suite's
  // Vulkan time, mostly).
  static void run_once(int32_t device_index, const std::vector<uint8_t>& bytes) {
    struct Run {
      std::unique_ptr<kiln_device> dev;
      kiln_loaded_executable* exe = nullptr;
      std::vector<kiln_buffer*> slots;
      ~Run() {
        if (exe != nullptr) loaded_free(dev.get(), exe);
        for (kiln_buffer* b : slots) buffer_free(dev.get(), b);
      }
    } run;
    run.dev.reset(device_open(device_index, 0));
    run.exe = load(run.dev.get(), bytes.data(), bytes.size());
    const std::vector<uint8_t> zeros(1 << 20, 0);
    for (uint64_t size : run.exe->schedule.slot_bytes) {
      run.slots.push_back(buffer_alloc(run.dev.get(), std::max<uint64_t>(size, 16)));
      for (uint64_t off = 0; off < size; off += zeros.size())
        buffer_write(run.dev.get(), run.slots.back(), off, zeros.data(), std::min<uint64_t>(zeros.size(), size - off));
    }
    try {
      execute(run.dev.get(), run.exe, run.slots.data());
    } catch (const Failure& f) {
      if (f.code != KILN_ERR_INVALID_ARGUMENT) throw;
    }
    synchronize(run.dev.get());
  }

  static kiln_loaded_executable* load(kiln_device* dev, const uint8_t* bytes, size_t size) {
    kiln::vk::Runtime& rt = *dev->rt;
    kiln::vk::ExecutableImage image = kiln::vk::decode_executable(bytes, size);
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
    return exe.release();
  }
  static void loaded_free(kiln_device*, kiln_loaded_executable* loaded) {
    std::lock_guard<std::mutex> lock(loaded->device->rt->mutex);
    delete loaded;
  }
  static const kiln_device* loaded_device(const kiln_loaded_executable* exe) { return exe->device; }
  static const std::vector<uint64_t>& slot_bytes(const kiln_loaded_executable* exe) { return exe->schedule.slot_bytes; }

  static void execute(kiln_device* dev, kiln_loaded_executable* exe, kiln_buffer* const* slots) {
    const kiln::vk::Schedule& s = exe->schedule;
    std::vector<VkBuffer> key(s.num_slots, VK_NULL_HANDLE);
    // The kit has checked the slots; the command buffer is recorded again
    // only when other buffers are bound.
    for (uint32_t i = 0; i < s.num_slots; ++i)
      if (s.slot_bytes[i] != 0) key[i] = slots[i]->b.buffer;
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
        record(exe, slots, i);
        const auto t0 = std::chrono::steady_clock::now();
        kiln::vk::vk_check(vkResetFences(d, 1, &exe->fence), "vkResetFences");
        VkSubmitInfo si{};
        si.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
        si.commandBufferCount = 1;
        si.pCommandBuffers = &exe->cb;
        kiln::vk::vk_check(vkQueueSubmit(rt.queue(), 1, &si, exe->fence), "vkQueueSubmit");
        kiln::vk::vk_check(vkWaitForFences(d, 1, &exe->fence, VK_TRUE, UINT64_MAX), "vkWaitForFences");
        dev->times.add(s.shaders[s.pipelines[s.dispatches[i].pipeline].shader], kiln::plugin_kit::seconds_since(t0));
      }
      exe->recorded = false;
    } else if (!exe->recorded || key != exe->recorded_for) {
      exe->recorded = false;
      record(exe, slots);
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
  }

  static void synchronize(kiln_device* device) {
    std::lock_guard<std::mutex> lock(device->rt->mutex);
    device->rt->wait_idle();
  }
  static bool op_supported(int32_t op) { return kiln::vk::kSupported.contains(op); }
  // Only the attention ops have shapes their kernel refuses (attention_node.h):
  // such a node runs as its decomposition, the chain, on every device of the list.
  static bool op_supported_node(int32_t op, const std::vector<kiln::plugin_kit::NodeTensor>& inputs,
                                const std::vector<kiln::plugin_kit::NodeTensor>& /*outputs*/) {
    return kiln::backend::attention_node_supported(op, inputs, [](const kiln::backend::AttentionNode& a) {
      auto& devices = kiln::vk::device_list();
      for (int32_t i = 0; i < devices.count(); ++i)
        if (!kiln::vk::plan_attention(devices.at(i), a.T, a.D, a.dropout, nullptr)) return false;
      return true;
    });
  }
};

}  // namespace

// Cheap by contract: no instance is created here (drivers can take long to
// initialise). The plugin links the Vulkan loader, so reaching this function
// means libvulkan loaded; whether any device exists is device_count's
// question, answered with 0 devices and a reason rather than a refusal.
KILN_PLUGIN_KIT_EXPORT(VulkanPlugin)
