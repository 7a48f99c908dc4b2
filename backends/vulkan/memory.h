// Device memory suballocated from large blocks: kiln allocates many small
// buffers (one per parameter, gradient, optimizer moment), and drivers limit
// the number of VkDeviceMemory objects (maxMemoryAllocationCount, often
// 4096). A buffer up to half a block takes a first-fit range of a block;
// larger ones get a block of their own. Host-visible blocks stay mapped.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "common.h"

#pragma GCC visibility push(hidden)

namespace kiln::vk {

struct Allocation {
  VkDeviceMemory memory = VK_NULL_HANDLE;
  uint64_t offset = 0, size = 0;
  size_t block = 0;
  uint8_t* mapped = nullptr;  // host pointer at offset, if host-visible
};

class Allocator {
 public:
  // type: the memory type index to allocate from.
  Allocator(VkDevice device, uint32_t type, bool host_visible, uint64_t block_bytes);
  ~Allocator();
  Allocator(const Allocator&) = delete;
  Allocator& operator=(const Allocator&) = delete;

  Allocation allocate(uint64_t size, uint64_t alignment);
  void release(const Allocation& a);

 private:
  struct Block {
    VkDeviceMemory memory = VK_NULL_HANDLE;
    uint64_t size = 0;
    uint8_t* mapped = nullptr;
    bool dedicated = false;
    std::map<uint64_t, uint64_t> free;  // offset -> size
  };
  size_t new_block(uint64_t size, bool dedicated);

  VkDevice device_;
  uint32_t type_;
  bool host_visible_;
  uint64_t block_bytes_;
  std::vector<Block> blocks_;
};

}  // namespace kiln::vk

#pragma GCC visibility pop
