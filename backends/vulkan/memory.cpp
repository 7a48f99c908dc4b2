#include "memory.h"

namespace kiln::vk {

Allocator::Allocator(VkDevice device, uint32_t type, bool host_visible, uint64_t block_bytes)
    : device_(device), type_(type), host_visible_(host_visible), block_bytes_(block_bytes) {}

Allocator::~Allocator() {
  for (Block& b : blocks_)
    if (b.memory != VK_NULL_HANDLE) vkFreeMemory(device_, b.memory, nullptr);
}

size_t Allocator::new_block(uint64_t size, bool dedicated) {
  VkMemoryAllocateInfo ai{};
  ai.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO;
  ai.allocationSize = size;
  ai.memoryTypeIndex = type_;
  Block b;
  b.size = size;
  b.dedicated = dedicated;
  vk_check(vkAllocateMemory(device_, &ai, nullptr, &b.memory), "allocating " + std::to_string(size) + " bytes");
  if (host_visible_) {
    void* p = nullptr;
    VkResult r = vkMapMemory(device_, b.memory, 0, VK_WHOLE_SIZE, 0, &p);
    if (r != VK_SUCCESS) {
      vkFreeMemory(device_, b.memory, nullptr);
      vk_check(r, "vkMapMemory");
    }
    b.mapped = static_cast<uint8_t*>(p);
  }
  b.free[0] = size;
  for (size_t i = 0; i < blocks_.size(); ++i)
    if (blocks_[i].memory == VK_NULL_HANDLE) {
      blocks_[i] = std::move(b);
      return i;
    }
  blocks_.push_back(std::move(b));
  return blocks_.size() - 1;
}

Allocation Allocator::allocate(uint64_t size, uint64_t alignment) {
  if (alignment == 0) alignment = 1;
  size = (size + 255) / 256 * 256;
  if (size > block_bytes_ / 2) {
    const size_t i = new_block(size, true);
    blocks_[i].free.clear();
    return Allocation{blocks_[i].memory, 0, size, i, blocks_[i].mapped};
  }
  for (int attempt = 0; attempt < 2; ++attempt) {
    for (size_t i = 0; i < blocks_.size(); ++i) {
      Block& b = blocks_[i];
      if (b.memory == VK_NULL_HANDLE || b.dedicated) continue;
      for (auto it = b.free.begin(); it != b.free.end(); ++it) {
        const uint64_t start = (it->first + alignment - 1) / alignment * alignment;
        const uint64_t end = it->first + it->second;
        if (start + size > end) continue;
        const uint64_t first = it->first;
        b.free.erase(it);
        if (start > first) b.free[first] = start - first;
        if (end > start + size) b.free[start + size] = end - (start + size);
        return Allocation{b.memory, start, size, i, b.mapped ? b.mapped + start : nullptr};
      }
    }
    new_block(block_bytes_, false);
  }
  fail(KILN_ERR_OUT_OF_MEMORY, "vulkan: no room for " + std::to_string(size) + " bytes in a fresh block");
}

void Allocator::release(const Allocation& a) {
  if (a.memory == VK_NULL_HANDLE || a.block >= blocks_.size()) return;
  Block& b = blocks_[a.block];
  if (b.dedicated) {
    vkFreeMemory(device_, b.memory, nullptr);
    b = Block{};
    return;
  }
  auto [it, inserted] = b.free.emplace(a.offset, a.size);
  (void)inserted;
  // Merge with the following and preceding free ranges.
  auto next = std::next(it);
  if (next != b.free.end() && it->first + it->second == next->first) {
    it->second += next->second;
    b.free.erase(next);
  }
  if (it != b.free.begin()) {
    auto prev = std::prev(it);
    if (prev->first + prev->second == it->first) {
      prev->second += it->second;
      b.free.erase(it);
    }
  }
}

}  // namespace kiln::vk
