#include "pipelines.h"

namespace kiln::vk {

PipelineSet::PipelineSet(VkDevice device, const std::vector<std::vector<uint32_t>>& spirv,
                         const std::vector<Pipeline>& pipelines, VkPipelineCache cache)
    : device_(device) {
  try {
    VkDescriptorSetLayoutBinding bindings[kMaxBindings]{};
    for (uint32_t i = 0; i < kMaxBindings; ++i) {
      bindings[i].binding = i;
      bindings[i].descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      bindings[i].descriptorCount = 1;
      bindings[i].stageFlags = VK_SHADER_STAGE_COMPUTE_BIT;
    }
    VkDescriptorSetLayoutCreateInfo sl{};
    sl.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO;
    sl.bindingCount = kMaxBindings;
    sl.pBindings = bindings;
    vk_check(vkCreateDescriptorSetLayout(device, &sl, nullptr, &set_layout_), "vkCreateDescriptorSetLayout");
    VkPushConstantRange push{VK_SHADER_STAGE_COMPUTE_BIT, 0, kMaxPushWords * 4};
    VkPipelineLayoutCreateInfo pl{};
    pl.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO;
    pl.setLayoutCount = 1;
    pl.pSetLayouts = &set_layout_;
    pl.pushConstantRangeCount = 1;
    pl.pPushConstantRanges = &push;
    vk_check(vkCreatePipelineLayout(device, &pl, nullptr, &layout_), "vkCreatePipelineLayout");
    for (const std::vector<uint32_t>& code : spirv) {
      VkShaderModuleCreateInfo mi{};
      mi.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO;
      mi.codeSize = code.size() * 4;
      mi.pCode = code.data();
      VkShaderModule m = VK_NULL_HANDLE;
      vk_check(vkCreateShaderModule(device, &mi, nullptr, &m), "vkCreateShaderModule");
      modules_.push_back(m);
    }
    for (const Pipeline& p : pipelines) {
      std::vector<VkSpecializationMapEntry> entries(p.spec.size());
      std::vector<uint32_t> data = p.spec;
      for (uint32_t i = 0; i < p.spec.size(); ++i) entries[i] = {i, i * 4, 4};
      // A 16-bit build reads its bindings' dtypes from constant 15.
      if (p.dtypes != 0) {
        entries.push_back({kDtypesConstant, static_cast<uint32_t>(data.size() * 4), 4});
        data.push_back(p.dtypes);
      }
      VkSpecializationInfo si{static_cast<uint32_t>(entries.size()), entries.data(), data.size() * 4, data.data()};
      VkComputePipelineCreateInfo ci{};
      ci.sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO;
      ci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
      ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
      ci.stage.module = modules_.at(p.shader);
      ci.stage.pName = "main";
      ci.stage.pSpecializationInfo = &si;
      ci.layout = layout_;
      VkPipeline pipe = VK_NULL_HANDLE;
      vk_check(vkCreateComputePipelines(device, cache, 1, &ci, nullptr, &pipe), "vkCreateComputePipelines");
      pipelines_.push_back(pipe);
    }
  } catch (...) {
    this->~PipelineSet();
    throw;
  }
}

PipelineSet::~PipelineSet() {
  for (VkPipeline p : pipelines_) vkDestroyPipeline(device_, p, nullptr);
  pipelines_.clear();
  for (VkShaderModule m : modules_) vkDestroyShaderModule(device_, m, nullptr);
  modules_.clear();
  if (layout_ != VK_NULL_HANDLE) vkDestroyPipelineLayout(device_, layout_, nullptr);
  layout_ = VK_NULL_HANDLE;
  if (set_layout_ != VK_NULL_HANDLE) vkDestroyDescriptorSetLayout(device_, set_layout_, nullptr);
  set_layout_ = VK_NULL_HANDLE;
}

}  // namespace kiln::vk
