// Device 0 of a backend, opened once per test process and kept for the
// tests after it (opening an OpenCL or Vulkan device costs more than most
// tests), or nullptr with the reason it could not be opened: tests skip
// with that reason on a machine without the driver.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "core/backend.h"
#include "core/error.h"
#include "core/registry.h"

namespace kiln::test {

inline Device* shared_device(const std::string& backend, std::string* why = nullptr) {
  struct Opened {
    std::unique_ptr<Device> device;
    std::string reason;
  };
  static std::map<std::string, Opened> opened;  // one per process: an inline function's static
  auto [it, first] = opened.try_emplace(backend);
  if (first) {
    try {
      it->second.device = Registry::instance().open(backend, 0);
    } catch (const Error& e) {
      it->second.reason = e.what();
    }
  }
  if (why != nullptr) *why = it->second.reason;
  return it->second.device.get();
}

// The shared Vulkan device, or nullptr with `why` when there is none or it
// lacks 16-bit storage (the bf16/f16 tests' requirement).
inline Device* vulkan_with_16bit_storage(std::string* why) {
  Device* device = shared_device("vulkan", why);
  if (device == nullptr) return nullptr;
  if ((device->properties().low_precision & KILN_LOWP_16BIT_STORAGE) == 0) {
    *why = "the Vulkan device has no 16-bit storage";
    return nullptr;
  }
  return device;
}

}  // namespace kiln::test
