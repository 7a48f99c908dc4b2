// Host-side handles over a loaded plugin: the plugin itself, an opened
// device, and device buffers. These are the only types the rest of the host
// uses to talk to a backend; they turn kiln_error* into kiln::Error.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/error.h"
#include "kiln/ops.h"
#include "kiln/plugin.h"

namespace kiln {

// Thrown by every typed call below when the plugin reports an error:
// "<backend>: <what> failed: <plugin message>", one line, with the plugin's
// error code (KILN_ERR_*) kept for callers that tell failures apart (the
// compile cache marks a rejected graph failed, but not an out-of-memory).
struct PluginError : Error {
  PluginError(const std::string& what, int32_t code) : Error(what), code(code) {}
  int32_t code;
};

// How many devices a backend has, and why none when it has none.
struct DeviceCount {
  int count = 0;
  std::string no_devices_reason;  // may be empty
};

// One tensor of a node, as the shape-aware support question describes it.
struct TensorDesc {
  int32_t dtype = 0;  // kiln_dtype (kiln/ir.h)
  std::vector<int64_t> dims;
};

// A plugin library that passed the loader's checks. The library stays
// loaded for the life of the process (plugins never unload mid-run).
//
// core/ is the only host-side client of the plugin ABI: the rest of the host
// calls the typed functions here and on Device/DeviceBuffer, never the
// function table.
class Plugin {
 public:
  // `table_size`: the bytes of the table the plugin filled in,
  // min(table struct_size, sizeof(kiln_plugin_api)). `binary_identity`:
  // the loader reads it from the file as it loads it (core/registry.cpp);
  // empty, it is read from `path` on first use.
  Plugin(std::string name, std::string path, const kiln_plugin_api* table, size_t table_size,
         std::string binary_identity = {});

  std::string name;  // backend name from the table, e.g. "cpu"
  std::string path;  // file it was loaded from

  // True if the table is large enough to hold `field` (append-only ABI:
  // an older plugin's table simply ends earlier) and the pointer is set.
  template <class F>
  bool has(F kiln_plugin_api::*field) const {
    auto offset = reinterpret_cast<size_t>(&(static_cast<kiln_plugin_api*>(nullptr)->*field));
    return offset + sizeof(F) <= api_size_ && api_->*field != nullptr;
  }

  int abi_major() const { return api_->abi_major; }
  int abi_minor() const { return api_->abi_minor; }
  // "" when the plugin states none.
  std::string compiler_version() const;
  // The plugin file's build identity (core/plugin_identity.h): part of every
  // compile-cache key, so a rebuilt plugin never runs its old executables.
  // Once per process. Throws kiln::Error if it must be read and cannot be.
  const std::string& binary_identity() const;
  // Whether the backend runs `op` on its devices: a plugin without
  // op_supported runs every op; host collectives never run on a device.
  bool supports(kiln_op op) const;
  // True when the plugin answers per node (op_supported_node, ABI 1.2).
  bool answers_per_node() const;
  // Whether the backend runs a node with this op, these input and output
  // tensors: op_supported_node's answer when the plugin has it, else
  // supports(op). Throws kiln::Error for a tensor of rank above
  // KILN_TENSOR_DESC_MAX_RANK.
  bool supports_node(kiln_op op, const std::vector<TensorDesc>& inputs, const std::vector<TensorDesc>& outputs) const;
  DeviceCount device_count() const;
  // Properties of device `index` without opening it (strings terminated).
  kiln_device_properties device_properties(int index) const;

  // Canonical IR -> executable bytes for device `device_index`. `options`
  // may be null (no codegen options). Throws PluginError.
  std::vector<uint8_t> compile(const std::vector<uint8_t>& ir, int device_index, const char* options = nullptr) const;
  kiln_loaded_executable* load(kiln_device* device, const std::vector<uint8_t>& executable) const;
  void execute(kiln_device* device, kiln_loaded_executable* loaded, const std::vector<kiln_buffer*>& slots) const;
  void loaded_free(kiln_device* device, kiln_loaded_executable* loaded) const;

  // The raw function table, for tests and tools that exercise the ABI
  // itself (loader tests, fuzzers, plugin tests). Host code never uses it.
  const kiln_plugin_api* raw_table() const { return api_; }
  size_t raw_table_size() const { return api_size_; }

 private:
  friend class Device;
  friend class DeviceBuffer;
  friend void check(const Plugin& plugin, kiln_error* error, const std::string& what);

  const kiln_plugin_api* api_;
  size_t api_size_;
  mutable std::once_flag identity_once_;
  mutable std::string identity_;
};

// Throws PluginError("<backend>: <what> failed: <plugin message>") and frees
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
  // True when the device can view other devices' host memory as its own
  // buffers (ABI 1.5 buffer_wrap_host: kiln's cpu backend).
  bool wraps_host() const { return plugin_->has(&kiln_plugin_api::buffer_wrap_host); }

 private:
  std::shared_ptr<const Plugin> plugin_;
  int index_;
  kiln_device* handle_ = nullptr;
  kiln_device_properties props_{};
};

class DeviceBuffer {
 public:
  DeviceBuffer(Device& device, uint64_t size_bytes);
  // A view on `device` of `host` (another device's host-memory buffer, see
  // host_address), which it keeps alive: no memory of its own (ABI 1.5
  // buffer_wrap_host). Check Device::wraps_host first.
  DeviceBuffer(Device& device, std::shared_ptr<DeviceBuffer> host);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  uint64_t size() const { return size_; }
  kiln_buffer* handle() const { return handle_; }
  Device& device() const { return device_; }
  void write(const void* src, uint64_t bytes, uint64_t offset = 0);
  void read(void* dst, uint64_t bytes, uint64_t offset = 0) const;
  void copy_from(const DeviceBuffer& src, uint64_t bytes, uint64_t src_offset = 0, uint64_t dst_offset = 0);
  // Where the bytes are in this process, when the device's buffers are host
  // memory the host may share (ABI 1.5 buffer_host_address, aligned to
  // KILN_IR_ALIGN); null otherwise. Asked once.
  void* host_address() const;

 private:
  Device& device_;
  uint64_t size_;
  kiln_buffer* handle_ = nullptr;
  std::shared_ptr<DeviceBuffer> viewed_;  // a view's memory
  mutable bool host_address_asked_ = false;
  mutable void* host_address_ = nullptr;
};

}  // namespace kiln
