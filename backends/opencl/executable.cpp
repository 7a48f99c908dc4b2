#include "executable.h"

#include "version.h"

namespace kiln::ocl {
namespace {

constexpr char kMagic[8] = {'K', 'I', 'L', 'N', 'O', 'C', 'L', '1'};
constexpr uint32_t kFormat = 1;
enum : uint32_t { kSectionSource = 1, kSectionBinary = 2, kSectionSchedule = 3 };

void section(Writer& w, uint32_t tag, const void* data, size_t size) {
  w.put<uint32_t>(tag);
  w.put<uint64_t>(size);
  w.put_bytes(data, size);
}

}  // namespace

std::vector<uint8_t> encode_executable(const ExecutableImage& image) {
  Writer w;
  w.put_bytes(kMagic, sizeof(kMagic));
  w.put<uint32_t>(kFormat);
  w.put_string(image.compiler_version);
  w.put_string(image.fingerprint);
  w.put_string(image.device_name);
  w.put<uint32_t>(3);
  section(w, kSectionSource, image.source.data(), image.source.size());
  section(w, kSectionBinary, image.binary.data(), image.binary.size());
  Writer sched;
  image.schedule.write(sched);
  section(w, kSectionSchedule, sched.bytes().data(), sched.bytes().size());
  return std::move(w.bytes());
}

ExecutableImage decode_executable(const uint8_t* bytes, size_t size) {
  if (bytes == nullptr || size < sizeof(kMagic) || std::memcmp(bytes, kMagic, sizeof(kMagic)) != 0)
    fail(KILN_ERR_CORRUPT, "not an opencl executable (bad magic)");
  Reader r(bytes, size, "opencl executable");
  r.take(sizeof(kMagic));
  const auto format = r.get<uint32_t>();
  if (format != kFormat)
    fail(KILN_ERR_CORRUPT, "opencl executable format " + std::to_string(format) + " is not supported (want " +
                               std::to_string(kFormat) + ")");
  ExecutableImage image;
  image.compiler_version = r.get_string();
  if (image.compiler_version != kCompilerVersion)
    fail(KILN_ERR_CORRUPT, "executable was compiled by " + image.compiler_version + ", this plugin is " +
                               kCompilerVersion + "; recompile it");
  image.fingerprint = r.get_string();
  image.device_name = r.get_string();
  const auto sections = r.get<uint32_t>();
  bool have_source = false, have_schedule = false;
  for (uint32_t s = 0; s < sections; ++s) {
    const auto tag = r.get<uint32_t>();
    const auto length = r.get<uint64_t>();
    const uint8_t* data = r.take(length);
    if (tag == kSectionSource) {
      image.source.assign(reinterpret_cast<const char*>(data), length);
      have_source = true;
    } else if (tag == kSectionBinary) {
      image.binary.assign(data, data + length);
    } else if (tag == kSectionSchedule) {
      Reader sr(data, length, "opencl schedule");
      image.schedule = Schedule::read(sr);
      if (!sr.done()) fail(KILN_ERR_CORRUPT, "opencl schedule has trailing bytes");
      have_schedule = true;
    }
  }
  if (!r.done()) fail(KILN_ERR_CORRUPT, "opencl executable has trailing bytes");
  if (!have_source || !have_schedule) fail(KILN_ERR_CORRUPT, "opencl executable lacks its source or schedule");
  return image;
}

}  // namespace kiln::ocl
