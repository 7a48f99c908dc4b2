// Fuzz target: the Vulkan plugin's executable bytes (backends/vulkan/
// executable.h), as load receives them from a compile cache. The decoder
// must either return an image or throw Failure{KILN_ERR_CORRUPT}; an image
// it returns must be self-consistent (every dispatch names an existing
// pipeline, every window lies inside its buffer), and the pipeline-cache
// check must give an answer for any blob. Nothing here needs a device.
//
// Seeds: tests/fuzz/make-vulkan-corpus.py compiles the IR seeds with the
// plugin (on lavapipe).
#include <string>

#include "executable.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) { return 0; }

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kiln::vk::ExecutableImage image;
  try {
    image = kiln::vk::decode_executable(data, size);
  } catch (const kiln::vk::Failure& f) {
    KILN_FUZZ_CHECK(f.code == KILN_ERR_CORRUPT, "decode failed with code " + std::to_string(f.code));
    KILN_FUZZ_CHECK(!f.message.empty(), "decode failed without a reason");
    return 0;
  }
  const kiln::vk::Schedule& s = image.schedule;
  KILN_FUZZ_CHECK(image.spirv.size() == s.shaders.size(), "SPIR-V and shader lists differ");
  for (const kiln::vk::Dispatch& d : s.dispatches) {
    KILN_FUZZ_CHECK(d.pipeline < s.pipelines.size(), "dispatch names a missing pipeline");
    KILN_FUZZ_CHECK(d.bindings.size() <= kiln::vk::kMaxBindings, "too many bindings");
    KILN_FUZZ_CHECK(d.push.size() >= d.bindings.size() && d.push.size() <= kiln::vk::kMaxPushWords,
                    "bad push constants");
    for (const kiln::vk::Binding& b : d.bindings)
      if (b.ref.mem == kiln::vk::Mem::Slot) {
        KILN_FUZZ_CHECK(b.ref.slot < s.num_slots, "binding outside the slots");
        KILN_FUZZ_CHECK(b.ref.offset + b.bytes <= s.slot_bytes[b.ref.slot], "binding outside its slot");
      }
  }
  kiln::vk::DeviceInfo device;  // vendor/device 0, zero UUID: nothing matches
  (void)kiln::vk::pipeline_cache_problem(image, device);
  return 0;
}
