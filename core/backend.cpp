#include "core/backend.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

namespace kiln {
namespace {

std::string format_bytes(uint64_t bytes) {
  static const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024) return fmt::format("{} B", bytes);
  double v = static_cast<double>(bytes) / 1024;
  int u = 0;
  while (v >= 1024 && u < 3) {
    v /= 1024;
    ++u;
  }
  return fmt::format("{:.1f} {}", v, units[u]);
}

const char* code_name(int32_t code) {
  switch (code) {
    case KILN_ERR_INVALID_ARGUMENT: return "invalid argument";
    case KILN_ERR_UNSUPPORTED: return "unsupported";
    case KILN_ERR_OUT_OF_MEMORY: return "out of memory";
    case KILN_ERR_DEVICE: return "device error";
    case KILN_ERR_CORRUPT: return "corrupt data";
    case KILN_ERR_INTERNAL: return "internal error";
    default: return "unknown error";
  }
}

// Errors must stay one line: the CLI prints them after "kiln: error: ".
std::string one_line(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  std::replace(s.begin(), s.end(), '\r', ' ');
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

template <class F>
void require(const Plugin& plugin, F kiln_plugin_api::*field, const char* op) {
  if (!plugin.has(field)) {
    throw Error(
        fmt::format("{}: this backend does not support {} (no such function in {})", plugin.name, op, plugin.path));
  }
}

// Checks [offset, offset+bytes) fits in size without overflowing.
void check_range(const Plugin& plugin, const char* op, uint64_t offset, uint64_t bytes, uint64_t size) {
  if (offset > size || bytes > size - offset) {
    throw Error(fmt::format("{}: {} of {} bytes at offset {} overruns a buffer of {} bytes", plugin.name, op, bytes,
                            offset, size));
  }
}

}  // namespace

void check(const Plugin& plugin, kiln_error* error, const std::string& what) {
  if (error == nullptr) return;
  std::string message;
  if (plugin.has(&kiln_plugin_api::error_message)) {
    const char* m = plugin.api->error_message(error);
    if (m != nullptr) message = m;
  }
  int32_t code = plugin.has(&kiln_plugin_api::error_code) ? plugin.api->error_code(error) : KILN_ERR_INTERNAL;
  if (plugin.has(&kiln_plugin_api::error_destroy)) plugin.api->error_destroy(error);
  if (message.empty()) message = code_name(code);
  throw Error(one_line(fmt::format("{}: {} failed: {}", plugin.name, what, message)));
}

Device::Device(std::shared_ptr<const Plugin> plugin, int index, int num_threads)
    : plugin_(std::move(plugin)), index_(index) {
  const Plugin& p = *plugin_;
  require(p, &kiln_plugin_api::device_count, "device_count");
  require(p, &kiln_plugin_api::device_properties, "device_properties");
  require(p, &kiln_plugin_api::device_open, "device_open");

  kiln_device_count_args count{};
  count.struct_size = sizeof(count);
  check(p, p.api->device_count(&count), "device_count");
  if (index < 0 || index >= count.count) {
    if (count.count <= 0) {
      count.no_devices_reason[sizeof(count.no_devices_reason) - 1] = '\0';
      if (count.no_devices_reason[0] != '\0')
        throw Error(fmt::format("{}: no devices: {}", p.name, count.no_devices_reason));
      throw Error(fmt::format("{}: no device {}; this backend found no devices on this machine", p.name, index));
    }
    throw Error(fmt::format("{}: no device {}; this backend has {} device{} (valid: 0..{})", p.name, index, count.count,
                            count.count == 1 ? "" : "s", count.count - 1));
  }

  props_.struct_size = sizeof(props_);
  kiln_device_properties_args pargs{};
  pargs.struct_size = sizeof(pargs);
  pargs.device_index = index;
  pargs.properties = &props_;
  check(p, p.api->device_properties(&pargs), fmt::format("device_properties of device {}", index));
  // Fixed-size strings come from foreign code; never trust their terminators.
  props_.name[sizeof(props_.name) - 1] = '\0';
  props_.vendor[sizeof(props_.vendor) - 1] = '\0';
  props_.driver_version[sizeof(props_.driver_version) - 1] = '\0';
  props_.fingerprint[sizeof(props_.fingerprint) - 1] = '\0';

  kiln_device_open_args oargs{};
  oargs.struct_size = sizeof(oargs);
  oargs.device_index = index;
  oargs.num_threads = num_threads;
  check(p, p.api->device_open(&oargs), fmt::format("device_open of device {}", index));
  if (oargs.device == nullptr) {
    throw Error(fmt::format("{}: device_open of device {} returned no device", p.name, index));
  }
  handle_ = oargs.device;
}

Device::~Device() {
  if (handle_ != nullptr && plugin_->has(&kiln_plugin_api::device_close)) {
    plugin_->api->device_close(handle_);
  }
}

void Device::synchronize() {
  require(*plugin_, &kiln_plugin_api::synchronize, "synchronize");
  check(*plugin_, plugin_->api->synchronize(handle_), "synchronize");
}

DeviceBuffer::DeviceBuffer(Device& device, uint64_t size_bytes) : device_(device), size_(size_bytes) {
  const Plugin& p = device.plugin();
  require(p, &kiln_plugin_api::buffer_alloc, "buffer_alloc");
  kiln_buffer_alloc_args args{};
  args.struct_size = sizeof(args);
  args.device = device.handle();
  args.size_bytes = size_bytes;
  const std::string what = fmt::format("buffer_alloc of {}", format_bytes(size_bytes));
  check(p, p.api->buffer_alloc(&args), what);
  if (args.buffer == nullptr) throw Error(fmt::format("{}: {} returned no buffer", p.name, what));
  handle_ = args.buffer;
}

DeviceBuffer::~DeviceBuffer() {
  const Plugin& p = device_.plugin();
  if (handle_ != nullptr && p.has(&kiln_plugin_api::buffer_free)) {
    p.api->buffer_free(device_.handle(), handle_);
  }
}

void DeviceBuffer::write(const void* src, uint64_t bytes, uint64_t offset) {
  const Plugin& p = device_.plugin();
  require(p, &kiln_plugin_api::buffer_write, "buffer_write");
  check_range(p, "buffer_write", offset, bytes, size_);
  kiln_buffer_transfer_args args{};
  args.struct_size = sizeof(args);
  args.device = device_.handle();
  args.buffer = handle_;
  args.offset = offset;
  args.size_bytes = bytes;
  // The ABI uses one args struct for both directions; write never modifies it.
  args.host = const_cast<void*>(src);
  check(p, p.api->buffer_write(&args), fmt::format("buffer_write of {}", format_bytes(bytes)));
}

void DeviceBuffer::read(void* dst, uint64_t bytes, uint64_t offset) const {
  const Plugin& p = device_.plugin();
  require(p, &kiln_plugin_api::buffer_read, "buffer_read");
  check_range(p, "buffer_read", offset, bytes, size_);
  kiln_buffer_transfer_args args{};
  args.struct_size = sizeof(args);
  args.device = device_.handle();
  args.buffer = handle_;
  args.offset = offset;
  args.size_bytes = bytes;
  args.host = dst;
  check(p, p.api->buffer_read(&args), fmt::format("buffer_read of {}", format_bytes(bytes)));
}

void DeviceBuffer::copy_from(const DeviceBuffer& src, uint64_t bytes, uint64_t src_offset, uint64_t dst_offset) {
  const Plugin& p = device_.plugin();
  if (&src.device_ != &device_) {
    throw Error(
        fmt::format("{}: buffer_copy between different devices is not supported; "
                    "read into host memory and write instead",
                    p.name));
  }
  require(p, &kiln_plugin_api::buffer_copy, "buffer_copy");
  check_range(p, "buffer_copy (source)", src_offset, bytes, src.size_);
  check_range(p, "buffer_copy (destination)", dst_offset, bytes, size_);
  kiln_buffer_copy_args args{};
  args.struct_size = sizeof(args);
  args.device = device_.handle();
  args.src = src.handle_;
  args.src_offset = src_offset;
  args.dst = handle_;
  args.dst_offset = dst_offset;
  args.size_bytes = bytes;
  check(p, p.api->buffer_copy(&args), fmt::format("buffer_copy of {}", format_bytes(bytes)));
}

}  // namespace kiln
