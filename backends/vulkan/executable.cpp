#include "executable.h"

#include <cstring>

#include "version.h"

namespace kiln::vk {

namespace {

// The plugin kit's container (kiln/plugin_kit.hpp), unchanged since format 1.
constexpr plugin_kit::ContainerFormat kFormat{{'K', 'I', 'L', 'N', 'V', 'K', '0', '1'}, 1, "vulkan", kCompilerVersion};

uint32_t read_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

}  // namespace

uint64_t checksum(const std::vector<uint8_t>& data) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (uint8_t c : data) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

std::vector<uint8_t> encode_executable(const ExecutableImage& image) {
  // Each section views its writer's bytes, alive until the container is written.
  plugin_kit::Container c{image.stamp, {}};
  Writer spirv;
  spirv.put<uint64_t>(image.spirv.size());
  for (size_t i = 0; i < image.spirv.size(); ++i) {
    spirv.put_string(image.schedule.shaders[i]);
    spirv.put<uint64_t>(image.spirv[i].size());
    spirv.put_bytes(image.spirv[i].data(), image.spirv[i].size() * 4);
  }
  c.sections.push_back({kSectionSpirv, spirv.bytes().data(), spirv.bytes().size()});
  Writer sched;
  image.schedule.write(sched);
  c.sections.push_back({kSectionSchedule, sched.bytes().data(), sched.bytes().size()});
  Writer cache;
  cache.put<uint64_t>(checksum(image.pipeline_cache));
  cache.put_bytes(image.pipeline_cache.data(), image.pipeline_cache.size());
  c.sections.push_back({kSectionPipelineCache, cache.bytes().data(), cache.bytes().size()});
  return plugin_kit::write_container(kFormat, c);
}

ExecutableImage decode_executable(const uint8_t* bytes, size_t size) {
  const plugin_kit::Container c = plugin_kit::read_container(kFormat, bytes, size);
  bool have_spirv = false, have_schedule = false;
  std::vector<std::string> spirv_names;
  ExecutableImage image;
  image.stamp = c.stamp;
  for (const plugin_kit::Section& section : c.sections) {
    Reader sr(section.data, section.size, "vulkan executable section");
    if (section.tag == kSectionSpirv) {
      const uint64_t n = sr.get_count(16);
      for (uint64_t k = 0; k < n; ++k) {
        spirv_names.push_back(sr.get_string());
        const uint64_t words = sr.get_count(4);
        std::vector<uint32_t> code(words);
        std::memcpy(code.data(), sr.take(words * 4), words * 4);
        image.spirv.push_back(std::move(code));
      }
      have_spirv = true;
    } else if (section.tag == kSectionSchedule) {
      image.schedule = Schedule::read(sr);
      have_schedule = true;
    } else if (section.tag == kSectionPipelineCache) {
      image.pipeline_cache_checksum = sr.get<uint64_t>();
      const uint8_t* blob = sr.take(section.size - 8);
      image.pipeline_cache.assign(blob, blob + (section.size - 8));
    } else {
      continue;  // a later version's section
    }
    if (!sr.done())
      fail(KILN_ERR_CORRUPT, "vulkan executable section " + std::to_string(section.tag) + " has trailing bytes");
  }
  if (!have_spirv || !have_schedule) fail(KILN_ERR_CORRUPT, "vulkan executable lacks its SPIR-V or schedule");
  if (spirv_names != image.schedule.shaders)
    fail(KILN_ERR_CORRUPT, "vulkan executable's SPIR-V does not match its schedule's shaders");
  return image;
}

std::string pipeline_cache_problem(const ExecutableImage& image, const DeviceInfo& device) {
  const std::vector<uint8_t>& blob = image.pipeline_cache;
  // VkPipelineCacheHeaderVersionOne: u32 headerSize, u32 headerVersion,
  // u32 vendorID, u32 deviceID, u8 pipelineCacheUUID[16].
  constexpr size_t kHeader = 16 + VK_UUID_SIZE;
  if (blob.size() < kHeader) return "it is " + std::to_string(blob.size()) + " bytes, shorter than its header";
  const uint32_t header_size = read_u32(blob.data());
  if (header_size < kHeader || header_size > blob.size())
    return "its header size " + std::to_string(header_size) + " is impossible";
  if (read_u32(blob.data() + 4) != VK_PIPELINE_CACHE_HEADER_VERSION_ONE)
    return "its header version " + std::to_string(read_u32(blob.data() + 4)) + " is unknown";
  if (read_u32(blob.data() + 8) != device.vendor_id || read_u32(blob.data() + 12) != device.device_id)
    return "it was made for another vendor or device";
  if (std::memcmp(blob.data() + 16, device.pipeline_cache_uuid, VK_UUID_SIZE) != 0)
    return "its pipelineCacheUUID is not this driver's";
  if (checksum(blob) != image.pipeline_cache_checksum) return "its checksum does not match (corrupt data)";
  return "";
}

}  // namespace kiln::vk
