#include "runtime.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace kiln::vk {

namespace {

constexpr VkBufferUsageFlags kUsage =
    VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
constexpr uint64_t kStagingChunk = 16ull << 20;

bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
}

// The memory type for buffers of `usage`: among those the buffer allows,
// prefer `want` flags, then device-local, then anything.
uint32_t pick_type(VkPhysicalDevice pd, uint32_t allowed, VkMemoryPropertyFlags want, VkMemoryPropertyFlags avoid,
                   VkMemoryPropertyFlags* got) {
  VkPhysicalDeviceMemoryProperties mp{};
  vkGetPhysicalDeviceMemoryProperties(pd, &mp);
  int best = -1, best_score = -1;
  for (uint32_t i = 0; i < mp.memoryTypeCount; ++i) {
    if (!(allowed & (1u << i))) continue;
    const VkMemoryPropertyFlags f = mp.memoryTypes[i].propertyFlags;
    int score = 0;
    if ((f & want) == want) score += 4;
    if (f & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT) score += 2;
    if (!(f & avoid)) score += 1;
    if (score > best_score) best = static_cast<int>(i), best_score = score;
  }
  if (best < 0) fail(KILN_ERR_DEVICE, "vulkan: no memory type for storage buffers");
  *got = mp.memoryTypes[best].propertyFlags;
  return static_cast<uint32_t>(best);
}

}  // namespace

Runtime::Runtime(const DeviceInfo& info) : info_(info), dev_(info) {
  VkCommandPoolCreateInfo pi{};
  pi.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO;
  pi.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
  pi.queueFamilyIndex = info.queue_family;
  vk_check(vkCreateCommandPool(dev_.device, &pi, nullptr, &pool_), "vkCreateCommandPool");
  VkCommandBufferAllocateInfo ai{};
  ai.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO;
  ai.commandPool = pool_;
  ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ai.commandBufferCount = 1;
  vk_check(vkAllocateCommandBuffers(dev_.device, &ai, &transfer_cb_), "vkAllocateCommandBuffers");
  VkFenceCreateInfo fi{};
  fi.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO;
  vk_check(vkCreateFence(dev_.device, &fi, nullptr, &transfer_fence_), "vkCreateFence");

  // What memory a storage buffer may live in, from a probe buffer.
  VkBufferCreateInfo bi{};
  bi.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
  bi.size = 256;
  bi.usage = kUsage;
  VkBuffer probe = VK_NULL_HANDLE;
  vk_check(vkCreateBuffer(dev_.device, &bi, nullptr, &probe), "vkCreateBuffer");
  VkMemoryRequirements req{};
  vkGetBufferMemoryRequirements(dev_.device, probe, &req);
  vkDestroyBuffer(dev_.device, probe, nullptr);
  // KILN_VULKAN_STAGING=1 keeps buffers unmapped even where memory is
  // host-visible, so the staging path is tested on lavapipe too.
  const bool force_staging = env_flag("KILN_VULKAN_STAGING");
  const VkMemoryPropertyFlags host = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  VkMemoryPropertyFlags got = 0;
  const uint32_t type = pick_type(info.physical, req.memoryTypeBits,
                                  force_staging ? VkMemoryPropertyFlags{VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT}
                                                : VkMemoryPropertyFlags{VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT | host},
                                  0, &got);
  direct_ = !force_staging && (got & host) == host;
  const uint64_t block = std::clamp<uint64_t>(info.memory_bytes / 16, 16ull << 20, 256ull << 20);
  allocator_ = std::make_unique<Allocator>(dev_.device, type, direct_, block);
  if (!direct_) {
    VkMemoryPropertyFlags sgot = 0;
    const uint32_t stype = pick_type(info.physical, req.memoryTypeBits, host, 0, &sgot);
    if ((sgot & host) != host) fail(KILN_ERR_DEVICE, "vulkan: no host-visible memory for staging buffers");
    staging_allocator_ = std::make_unique<Allocator>(dev_.device, stype, true, kStagingChunk * 2);
  }
}

Runtime::~Runtime() {
  vkDeviceWaitIdle(dev_.device);
  if (staging_.buffer != VK_NULL_HANDLE) {
    vkDestroyBuffer(dev_.device, staging_.buffer, nullptr);
    staging_allocator_->release(staging_.memory);
  }
  staging_allocator_.reset();
  allocator_.reset();
  if (transfer_fence_ != VK_NULL_HANDLE) vkDestroyFence(dev_.device, transfer_fence_, nullptr);
  if (pool_ != VK_NULL_HANDLE) vkDestroyCommandPool(dev_.device, pool_, nullptr);
}

DeviceBuffer Runtime::create_buffer(uint64_t size) {
  DeviceBuffer b;
  b.size = size;
  VkBufferCreateInfo bi{};
  bi.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
  bi.size = std::max<uint64_t>(size, 256);  // zero-sized buffers are invalid
  bi.usage = kUsage;
  vk_check(vkCreateBuffer(dev_.device, &bi, nullptr, &b.buffer),
           "vkCreateBuffer of " + std::to_string(size) + " bytes");
  try {
    VkMemoryRequirements req{};
    vkGetBufferMemoryRequirements(dev_.device, b.buffer, &req);
    b.memory = allocator_->allocate(req.size, req.alignment);
    vk_check(vkBindBufferMemory(dev_.device, b.buffer, b.memory.memory, b.memory.offset), "vkBindBufferMemory");
  } catch (...) {
    allocator_->release(b.memory);
    vkDestroyBuffer(dev_.device, b.buffer, nullptr);
    throw;
  }
  return b;
}

void Runtime::destroy_buffer(DeviceBuffer& b) {
  if (b.buffer == VK_NULL_HANDLE) return;
  vkDestroyBuffer(dev_.device, b.buffer, nullptr);
  allocator_->release(b.memory);
  b = DeviceBuffer{};
}

void Runtime::wait_idle() { vk_check(vkQueueWaitIdle(dev_.queue), "vkQueueWaitIdle"); }

template <class F>
void Runtime::submit_and_wait(F&& record) {
  vk_check(vkResetCommandBuffer(transfer_cb_, 0), "vkResetCommandBuffer");
  VkCommandBufferBeginInfo bi{};
  bi.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO;
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  vk_check(vkBeginCommandBuffer(transfer_cb_, &bi), "vkBeginCommandBuffer");
  // Earlier dispatches' and copies' writes are visible to this copy, and
  // its writes to the host and to later work.
  VkMemoryBarrier mb{};
  mb.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER;
  mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_HOST_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  vkCmdPipelineBarrier(transfer_cb_, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &mb, 0,
                       nullptr, 0, nullptr);
  record(transfer_cb_);
  mb.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT | VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
  vkCmdPipelineBarrier(transfer_cb_, VK_PIPELINE_STAGE_TRANSFER_BIT,
                       VK_PIPELINE_STAGE_HOST_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &mb, 0, nullptr, 0,
                       nullptr);
  vk_check(vkEndCommandBuffer(transfer_cb_), "vkEndCommandBuffer");
  VkSubmitInfo si{};
  si.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO;
  si.commandBufferCount = 1;
  si.pCommandBuffers = &transfer_cb_;
  vk_check(vkResetFences(dev_.device, 1, &transfer_fence_), "vkResetFences");
  vk_check(vkQueueSubmit(dev_.queue, 1, &si, transfer_fence_), "vkQueueSubmit (transfer)");
  vk_check(vkWaitForFences(dev_.device, 1, &transfer_fence_, VK_TRUE, UINT64_MAX), "vkWaitForFences (transfer)");
}

void Runtime::ensure_staging(uint64_t size) {
  if (staging_.buffer != VK_NULL_HANDLE && staging_.size >= size) return;
  if (staging_.buffer != VK_NULL_HANDLE) {
    vkDestroyBuffer(dev_.device, staging_.buffer, nullptr);
    staging_allocator_->release(staging_.memory);
    staging_ = DeviceBuffer{};
  }
  VkBufferCreateInfo bi{};
  bi.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO;
  bi.size = size;
  bi.usage = VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  vk_check(vkCreateBuffer(dev_.device, &bi, nullptr, &staging_.buffer), "vkCreateBuffer (staging)");
  VkMemoryRequirements req{};
  vkGetBufferMemoryRequirements(dev_.device, staging_.buffer, &req);
  staging_.memory = staging_allocator_->allocate(req.size, req.alignment);
  staging_.size = size;
  vk_check(vkBindBufferMemory(dev_.device, staging_.buffer, staging_.memory.memory, staging_.memory.offset),
           "vkBindBufferMemory (staging)");
}

void Runtime::write(const DeviceBuffer& b, uint64_t offset, const void* host, uint64_t size) {
  wait_idle();
  const auto* src = static_cast<const uint8_t*>(host);
  if (direct_) {
    std::memcpy(b.memory.mapped + offset, src, size);
    return;
  }
  ensure_staging(std::min(size, kStagingChunk));
  for (uint64_t done = 0; done < size;) {
    const uint64_t n = std::min(kStagingChunk, size - done);
    std::memcpy(staging_.memory.mapped, src + done, n);
    submit_and_wait([&](VkCommandBuffer cb) {
      VkBufferCopy region{0, offset + done, n};
      vkCmdCopyBuffer(cb, staging_.buffer, b.buffer, 1, &region);
    });
    done += n;
  }
}

void Runtime::read(const DeviceBuffer& b, uint64_t offset, void* host, uint64_t size) {
  wait_idle();
  auto* dst = static_cast<uint8_t*>(host);
  if (direct_) {
    std::memcpy(dst, b.memory.mapped + offset, size);
    return;
  }
  ensure_staging(std::min(size, kStagingChunk));
  for (uint64_t done = 0; done < size;) {
    const uint64_t n = std::min(kStagingChunk, size - done);
    submit_and_wait([&](VkCommandBuffer cb) {
      VkBufferCopy region{offset + done, 0, n};
      vkCmdCopyBuffer(cb, b.buffer, staging_.buffer, 1, &region);
    });
    std::memcpy(dst + done, staging_.memory.mapped, n);
    done += n;
  }
}

void Runtime::copy(const DeviceBuffer& src, uint64_t src_offset, const DeviceBuffer& dst, uint64_t dst_offset,
                   uint64_t size) {
  const bool overlap = src.buffer == dst.buffer && src_offset < dst_offset + size && dst_offset < src_offset + size;
  if (overlap) {
    // vkCmdCopyBuffer forbids overlapping regions: go through the host.
    std::vector<uint8_t> tmp(size);
    read(src, src_offset, tmp.data(), size);
    write(dst, dst_offset, tmp.data(), size);
    return;
  }
  submit_and_wait([&](VkCommandBuffer cb) {
    VkBufferCopy region{src_offset, dst_offset, size};
    vkCmdCopyBuffer(cb, src.buffer, dst.buffer, 1, &region);
  });
}

}  // namespace kiln::vk
