#include "executable.h"

#include "version.h"

namespace kiln::ocl {
namespace {

// The plugin kit's container (kiln/plugin_kit.hpp), unchanged since format 1.
constexpr plugin_kit::ContainerFormat kFormat{{'K', 'I', 'L', 'N', 'O', 'C', 'L', '1'}, 1, "opencl", kCompilerVersion};
enum : uint32_t { kSectionSource = 1, kSectionBinary = 2, kSectionSchedule = 3 };

}  // namespace

std::vector<uint8_t> encode_executable(const ExecutableImage& image) {
  Writer sched;
  image.schedule.write(sched);
  plugin_kit::Container c{image.stamp, {}};
  c.sections = {{kSectionSource, reinterpret_cast<const uint8_t*>(image.source.data()), image.source.size()},
                {kSectionBinary, image.binary.data(), image.binary.size()},
                {kSectionSchedule, sched.bytes().data(), sched.bytes().size()}};
  return plugin_kit::write_container(kFormat, c);
}

ExecutableImage decode_executable(const uint8_t* bytes, size_t size) {
  const plugin_kit::Container c = plugin_kit::read_container(kFormat, bytes, size);
  ExecutableImage image;
  image.stamp = c.stamp;
  const plugin_kit::Section* source = c.find(kSectionSource);
  const plugin_kit::Section* schedule = c.find(kSectionSchedule);
  if (source == nullptr || schedule == nullptr)
    fail(KILN_ERR_CORRUPT, "opencl executable lacks its source or schedule");
  image.source.assign(reinterpret_cast<const char*>(source->data), source->size);
  if (const plugin_kit::Section* binary = c.find(kSectionBinary))
    image.binary.assign(binary->data, binary->data + binary->size);
  Reader sr(schedule->data, schedule->size, "opencl schedule");
  image.schedule = Schedule::read(sr);
  if (!sr.done()) fail(KILN_ERR_CORRUPT, "opencl schedule has trailing bytes");
  return image;
}

}  // namespace kiln::ocl
