#include "core/fallback_device.h"

#include <utility>

#include "core/registry.h"

namespace kiln {

FallbackDevice::FallbackDevice(std::string backend, int num_threads)
    : backend_(std::move(backend)), num_threads_(num_threads) {}

FallbackDevice::FallbackDevice(Device& device) : backend_(device.backend()), device_(&device) {}

FallbackDevice::~FallbackDevice() = default;

Device& FallbackDevice::get() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (device_ == nullptr) {
    owned_ = Registry::instance().open(backend_, 0, num_threads_);
    device_ = owned_.get();
  }
  return *device_;
}

}  // namespace kiln
