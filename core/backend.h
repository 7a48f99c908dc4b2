// Host-side handles over a loaded plugin: the plugin itself, an opened
// device, and device buffers. These are the only types the rest of the host
// uses to talk to a backend; they turn kiln_error* into kiln::Error.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/error.h"
#include "kiln/plugin.h"

namespace kiln {

// A plugin library that passed the loader's checks. The library stays
// loaded for the life of the process (plugins never unload mid-run).
struct Plugin {
  std::string name;  // backend name from the table, e.g. "cpu"
  std::string path;  // file it was loaded from
  const kiln_plugin_api* api = nullptr;
  size_t api_size = 0;  // min(table struct_size, sizeof(kiln_plugin_api))

  // True if the table is large enough to hold `field` (append-only ABI:
  // an older plugin's table simply ends earlier) and the pointer is set.
  template <class F>
  bool has(F kiln_plugin_api::*field) const {
    auto offset = reinterpret_cast<size_t>(&(static_cast<kiln_plugin_api*>(nullptr)->*field));
    return offset + sizeof(F) <= api_size && api->*field != nullptr;
  }
};

// Throws kiln::Error("<backend>: <what> failed: <plugin message>") and frees
// the error; does nothing for NULL (success).
void check(const Plugin& plugin, kiln_error* error, const std::string& what);

class Device {
 public:
  Device(std::shared_ptr<const Plugin> plugin, int index, int num_threads);
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  const Plugin& plugin() const { return *plugin_; }
  const std::string& backend() const { return plugin_->name; }
  int index() const { return index_; }
  kiln_device* handle() const { return handle_; }
  const kiln_device_properties& properties() const { return props_; }
  void synchronize();

 private:
  std::shared_ptr<const Plugin> plugin_;
  int index_;
  kiln_device* handle_ = nullptr;
  kiln_device_properties props_{};
};

class DeviceBuffer {
 public:
  DeviceBuffer(Device& device, uint64_t size_bytes);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  uint64_t size() const { return size_; }
  kiln_buffer* handle() const { return handle_; }
  Device& device() const { return device_; }
  void write(const void* src, uint64_t bytes, uint64_t offset = 0);
  void read(void* dst, uint64_t bytes, uint64_t offset = 0) const;
  void copy_from(const DeviceBuffer& src, uint64_t bytes, uint64_t src_offset = 0, uint64_t dst_offset = 0);

 private:
  Device& device_;
  uint64_t size_;
  kiln_buffer* handle_ = nullptr;
};

}  // namespace kiln
