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

}  // namespace kiln::test
