// The device that runs the ops a primary backend lacks (the cpu backend's
// device 0). Whoever runs graphs (the trainer, kiln generate, check-backend,
// a test) owns one and hands it to every graph::Executable it builds; it
// opens on first need, so a run whose backend has every op never opens it.
// It must outlive the executables that use it.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "core/backend.h"

namespace kiln {

class FallbackDevice {
 public:
  // Opens `backend` device 0 through the registry on first get().
  explicit FallbackDevice(std::string backend = "cpu", int num_threads = 0);
  // Uses a device the caller already opened (and keeps open).
  explicit FallbackDevice(Device& device);
  FallbackDevice(const FallbackDevice&) = delete;
  FallbackDevice& operator=(const FallbackDevice&) = delete;
  ~FallbackDevice();

  const std::string& backend() const { return backend_; }
  // The device, opened now if not yet. Throws kiln::Error if it cannot open.
  Device& get();

 private:
  std::string backend_;
  int num_threads_ = 0;
  std::mutex mutex_;
  std::unique_ptr<Device> owned_;
  Device* device_ = nullptr;
};

}  // namespace kiln
