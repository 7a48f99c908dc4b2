// The opened device: a VkDevice with one compute queue, the block
// allocator, host transfers (mapped memory when the memory type is
// host-visible, else through a staging buffer), and one-shot command
// submission for copies. plugin.cpp builds the ABI on top of it.
#pragma once

#include <memory>
#include <mutex>

#include "device.h"
#include "memory.h"

#pragma GCC visibility push(hidden)

namespace kiln::vk {

struct DeviceBuffer {
  VkBuffer buffer = VK_NULL_HANDLE;
  Allocation memory;
  uint64_t size = 0;
};

class Runtime {
 public:
  explicit Runtime(const DeviceInfo& info);
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  const DeviceInfo& info() const { return info_; }
  VkDevice device() const { return dev_.device; }
  VkQueue queue() const { return dev_.queue; }
  VkCommandPool pool() const { return pool_; }

  DeviceBuffer create_buffer(uint64_t size);
  void destroy_buffer(DeviceBuffer& b);

  // Blocking transfers; they wait for all submitted work first.
  void write(const DeviceBuffer& b, uint64_t offset, const void* host, uint64_t size);
  void read(const DeviceBuffer& b, uint64_t offset, void* host, uint64_t size);
  void copy(const DeviceBuffer& src, uint64_t src_offset, const DeviceBuffer& dst, uint64_t dst_offset, uint64_t size);

  // Waits until the queue is idle.
  void wait_idle();

  // All ABI calls on one device hold this (execute records shared state).
  std::mutex mutex;

 private:
  // Records `record` into the transfer command buffer, submits and waits.
  template <class F>
  void submit_and_wait(F&& record);
  void ensure_staging(uint64_t size);

  const DeviceInfo& info_;
  LogicalDevice dev_;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  VkCommandBuffer transfer_cb_ = VK_NULL_HANDLE;
  VkFence transfer_fence_ = VK_NULL_HANDLE;
  bool direct_ = false;  // buffers are host-visible: transfers are memcpy
  std::unique_ptr<Allocator> allocator_;
  std::unique_ptr<Allocator> staging_allocator_;
  DeviceBuffer staging_;
};

}  // namespace kiln::vk

#pragma GCC visibility pop
