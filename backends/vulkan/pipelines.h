// The compute pipelines of one schedule on one VkDevice: a descriptor-set
// layout of kMaxBindings storage buffers and a 128-byte push-constant range
// shared by every shader, one shader module per SPIR-V module and one
// pipeline per (shader, specialization constants). compile builds them to
// fill a VkPipelineCache; load builds them again, seeded from that cache.
#pragma once

#include <vector>

#include "schedule.h"

#pragma GCC visibility push(hidden)

namespace kiln::vk {

class PipelineSet {
 public:
  PipelineSet(VkDevice device, const std::vector<std::vector<uint32_t>>& spirv, const std::vector<Pipeline>& pipelines,
              VkPipelineCache cache);
  ~PipelineSet();
  PipelineSet(const PipelineSet&) = delete;
  PipelineSet& operator=(const PipelineSet&) = delete;

  VkDescriptorSetLayout set_layout() const { return set_layout_; }
  VkPipelineLayout layout() const { return layout_; }
  VkPipeline pipeline(size_t i) const { return pipelines_[i]; }

 private:
  VkDevice device_;
  VkDescriptorSetLayout set_layout_ = VK_NULL_HANDLE;
  VkPipelineLayout layout_ = VK_NULL_HANDLE;
  std::vector<VkShaderModule> modules_;
  std::vector<VkPipeline> pipelines_;
};

}  // namespace kiln::vk

#pragma GCC visibility pop
