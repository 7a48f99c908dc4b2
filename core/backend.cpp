#include "core/backend.h"

#include <fmt/format.h>

#include <algorithm>
#include <exception>
#include <utility>

#include "core/plugin_call.h"
#include "core/plugin_identity.h"
#include "kiln/ir.h"

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

// A C++ exception that escapes a plugin function crossed a C ABI (undefined
// behaviour, but it happens): say whose it was, instead of letting it reach
// main() as a nameless internal error.
PluginError escaped_exception(const Plugin& plugin, const char* function, const char* what) {
  return PluginError(one_line(fmt::format("{}: {} let a C++ exception escape{}{}; a plugin must catch everything and "
                                          "return a kiln_error (plugin {})",
                                          plugin.name, function, what ? ": " : "", what ? what : "", plugin.path)),
                     KILN_ERR_INTERNAL);
}

// Runs one plugin function with the call recorded (core/plugin_call: a
// fatal signal names it) and anything it throws turned into a PluginError.
template <class Fn, class... Args>
auto call(const Plugin& plugin, const char* function, Fn* fn, Args... args) {
  const PluginCall record(plugin, function);
  try {
    return fn(args...);
  } catch (const std::exception& e) {
    throw escaped_exception(plugin, function, e.what());
  } catch (...) {
    throw escaped_exception(plugin, function, nullptr);
  }
}

// For the calls made from destructors, which must not throw: recorded only.
template <class Fn, class... Args>
void call_noexcept(const Plugin& plugin, const char* function, Fn* fn, Args... args) noexcept {
  const PluginCall record(plugin, function);
  fn(args...);
}

}  // namespace

void check(const Plugin& plugin, kiln_error* error, const std::string& what) {
  if (error == nullptr) return;
  std::string message;
  if (plugin.has(&kiln_plugin_api::error_message)) {
    const char* m = call(plugin, "error_message", plugin.api_->error_message, error);
    if (m != nullptr) message = m;
  }
  int32_t code = plugin.has(&kiln_plugin_api::error_code) ? call(plugin, "error_code", plugin.api_->error_code, error)
                                                          : KILN_ERR_INTERNAL;
  if (plugin.has(&kiln_plugin_api::error_destroy)) call(plugin, "error_destroy", plugin.api_->error_destroy, error);
  if (message.empty()) message = code_name(code);
  throw PluginError(one_line(fmt::format("{}: {} failed: {}", plugin.name, what, message)), code);
}

Plugin::Plugin(std::string name, std::string path, const kiln_plugin_api* table, size_t table_size,
               std::string binary_identity)
    : name(std::move(name)),
      path(std::move(path)),
      api_(table),
      api_size_(table_size),
      identity_(std::move(binary_identity)) {}

std::string Plugin::compiler_version() const {
  if (!has(&kiln_plugin_api::compiler_version)) return {};
  const char* v = call(*this, "compiler_version", api_->compiler_version);
  return v ? v : "";
}

const std::string& Plugin::binary_identity() const {
  std::call_once(identity_once_, [this] {
    if (identity_.empty()) identity_ = plugin_binary_identity(path);
  });
  return identity_;
}

bool Plugin::supports(kiln_op op) const {
  if (kiln_op_has(op, KILN_OPP_HOST_COLLECTIVE)) return false;
  if (!has(&kiln_plugin_api::op_supported)) return true;  // NULL: every op
  kiln_op_supported_args args{};
  args.struct_size = sizeof(args);
  args.op = op;
  check(*this, call(*this, "op_supported", api_->op_supported, &args), "op_supported");
  return args.supported != 0;
}

bool Plugin::answers_per_node() const { return has(&kiln_plugin_api::op_supported_node); }

bool Plugin::supports_node(kiln_op op, const std::vector<TensorDesc>& inputs,
                           const std::vector<TensorDesc>& outputs) const {
  if (kiln_op_has(op, KILN_OPP_HOST_COLLECTIVE)) return false;
  if (!answers_per_node()) return supports(op);
  auto describe = [&](const std::vector<TensorDesc>& tensors) {
    std::vector<kiln_tensor_desc> out(tensors.size());
    for (size_t i = 0; i < tensors.size(); ++i) {
      if (tensors[i].dims.size() > KILN_TENSOR_DESC_MAX_RANK)
        throw Error(fmt::format("{}: op_supported_node: a {} tensor has rank {}, above the ABI's {}", name,
                                kiln_op_name(op), tensors[i].dims.size(), KILN_TENSOR_DESC_MAX_RANK));
      out[i].struct_size = sizeof(kiln_tensor_desc);
      out[i].dtype = tensors[i].dtype;
      out[i].rank = static_cast<int32_t>(tensors[i].dims.size());
      std::copy(tensors[i].dims.begin(), tensors[i].dims.end(), out[i].dims);
    }
    return out;
  };
  const std::vector<kiln_tensor_desc> in = describe(inputs), out = describe(outputs);
  kiln_node_supported_args args{};
  args.struct_size = sizeof(args);
  args.op = op;
  args.num_inputs = static_cast<int32_t>(in.size());
  args.inputs = in.data();
  args.num_outputs = static_cast<int32_t>(out.size());
  args.outputs = out.data();
  check(*this, call(*this, "op_supported_node", api_->op_supported_node, &args),
        fmt::format("op_supported_node for {}", kiln_op_name(op)));
  return args.supported != 0;
}

DeviceCount Plugin::device_count() const {
  require(*this, &kiln_plugin_api::device_count, "device_count");
  kiln_device_count_args args{};
  args.struct_size = sizeof(args);
  check(*this, call(*this, "device_count", api_->device_count, &args), "device_count");
  DeviceCount out;
  out.count = args.count;
  if (args.count <= 0) {
    args.no_devices_reason[sizeof(args.no_devices_reason) - 1] = '\0';
    out.no_devices_reason = args.no_devices_reason;
  }
  return out;
}

kiln_device_properties Plugin::device_properties(int index) const {
  require(*this, &kiln_plugin_api::device_properties, "device_properties");
  kiln_device_properties props{};
  props.struct_size = sizeof(props);
  kiln_device_properties_args args{};
  args.struct_size = sizeof(args);
  args.device_index = index;
  args.properties = &props;
  check(*this, call(*this, "device_properties", api_->device_properties, &args),
        fmt::format("device_properties of device {}", index));
  // Fixed-size strings come from foreign code; never trust their terminators.
  props.name[sizeof(props.name) - 1] = '\0';
  props.vendor[sizeof(props.vendor) - 1] = '\0';
  props.driver_version[sizeof(props.driver_version) - 1] = '\0';
  props.fingerprint[sizeof(props.fingerprint) - 1] = '\0';
  return props;
}

std::vector<uint8_t> Plugin::compile(const std::vector<uint8_t>& ir, int device_index, const char* options) const {
  kiln_compile_args args{};
  args.struct_size = sizeof(args);
  args.ir = ir.data();
  args.ir_size = ir.size();
  args.options = options;
  args.device_index = device_index;
  check(*this, call(*this, "compile", api_->compile, &args), "compile");
  if (args.executable == nullptr || args.executable_size == 0) {
    // Never a cache entry: nothing could load it, and a cached empty
    // executable would fail every later run the same way.
    if (args.executable != nullptr) call(*this, "executable_bytes_free", api_->executable_bytes_free, args.executable);
    throw PluginError(fmt::format("plugin {} ({}) returned an empty executable for a graph of {} IR bytes; a compile "
                                  "must return executable bytes or an error",
                                  name, path, ir.size()),
                      KILN_ERR_INTERNAL);
  }
  std::vector<uint8_t> exe(args.executable, args.executable + args.executable_size);
  call(*this, "executable_bytes_free", api_->executable_bytes_free, args.executable);
  return exe;
}

kiln_loaded_executable* Plugin::load(kiln_device* device, const std::vector<uint8_t>& executable) const {
  kiln_load_args args{};
  args.struct_size = sizeof(args);
  args.device = device;
  args.executable = executable.data();
  args.executable_size = executable.size();
  check(*this, call(*this, "load", api_->load, &args), "load");
  return args.loaded;
}

void Plugin::execute(kiln_device* device, kiln_loaded_executable* loaded,
                     const std::vector<kiln_buffer*>& slots) const {
  kiln_execute_args args{};
  args.struct_size = sizeof(args);
  args.device = device;
  args.loaded = loaded;
  args.slots = slots.data();
  args.num_slots = static_cast<int32_t>(slots.size());
  check(*this, call(*this, "execute", api_->execute, &args), "execute");
}

void Plugin::loaded_free(kiln_device* device, kiln_loaded_executable* loaded) const {
  if (loaded != nullptr) call_noexcept(*this, "loaded_free", api_->loaded_free, device, loaded);
}

Device::Device(std::shared_ptr<const Plugin> plugin, int index, int num_threads)
    : plugin_(std::move(plugin)), index_(index) {
  const Plugin& p = *plugin_;
  require(p, &kiln_plugin_api::device_count, "device_count");
  require(p, &kiln_plugin_api::device_properties, "device_properties");
  require(p, &kiln_plugin_api::device_open, "device_open");

  const DeviceCount count = p.device_count();
  if (index < 0 || index >= count.count) {
    if (count.count <= 0) {
      if (!count.no_devices_reason.empty())
        throw Error(fmt::format("{}: no devices: {}", p.name, count.no_devices_reason));
      throw Error(fmt::format("{}: no device {}; this backend found no devices on this machine", p.name, index));
    }
    throw Error(fmt::format("{}: no device {}; this backend has {} device{} (valid: 0..{})", p.name, index, count.count,
                            count.count == 1 ? "" : "s", count.count - 1));
  }
  props_ = p.device_properties(index);

  kiln_device_open_args oargs{};
  oargs.struct_size = sizeof(oargs);
  oargs.device_index = index;
  oargs.num_threads = num_threads;
  check(p, call(p, "device_open", p.api_->device_open, &oargs), fmt::format("device_open of device {}", index));
  if (oargs.device == nullptr) {
    throw Error(fmt::format("{}: device_open of device {} returned no device", p.name, index));
  }
  handle_ = oargs.device;
}

Device::~Device() {
  if (handle_ != nullptr && plugin_->has(&kiln_plugin_api::device_close)) {
    call_noexcept(*plugin_, "device_close", plugin_->api_->device_close, handle_);
  }
}

void Device::synchronize() {
  require(*plugin_, &kiln_plugin_api::synchronize, "synchronize");
  check(*plugin_, call(*plugin_, "synchronize", plugin_->api_->synchronize, handle_), "synchronize");
}

DeviceBuffer::DeviceBuffer(Device& device, uint64_t size_bytes) : device_(device), size_(size_bytes) {
  const Plugin& p = device.plugin();
  require(p, &kiln_plugin_api::buffer_alloc, "buffer_alloc");
  kiln_buffer_alloc_args args{};
  args.struct_size = sizeof(args);
  args.device = device.handle();
  args.size_bytes = size_bytes;
  const std::string what = fmt::format("buffer_alloc of {}", format_bytes(size_bytes));
  check(p, call(p, "buffer_alloc", p.api_->buffer_alloc, &args), what);
  if (args.buffer == nullptr) throw Error(fmt::format("{}: {} returned no buffer", p.name, what));
  handle_ = args.buffer;
}

DeviceBuffer::DeviceBuffer(Device& device, std::shared_ptr<DeviceBuffer> host)
    : device_(device), size_(host->size()), viewed_(std::move(host)) {
  const Plugin& p = device.plugin();
  require(p, &kiln_plugin_api::buffer_wrap_host, "buffer_wrap_host");
  void* address = viewed_->host_address();
  if (address == nullptr)
    throw Error(fmt::format("{}: cannot view a {} buffer: it is not host memory", p.name, viewed_->device().backend()));
  kiln_buffer_wrap_host_args args{};
  args.struct_size = sizeof(args);
  args.device = device.handle();
  args.address = address;
  args.size_bytes = size_;
  const std::string what = fmt::format("buffer_wrap_host of {}", format_bytes(size_));
  check(p, call(p, "buffer_wrap_host", p.api_->buffer_wrap_host, &args), what);
  if (args.buffer == nullptr) throw Error(fmt::format("{}: {} returned no buffer", p.name, what));
  handle_ = args.buffer;
}

void* DeviceBuffer::host_address() const {
  if (host_address_asked_) return host_address_;
  host_address_asked_ = true;
  const Plugin& p = device_.plugin();
  if (!p.has(&kiln_plugin_api::buffer_host_address)) return nullptr;
  kiln_buffer_host_address_args args{};
  args.struct_size = sizeof(args);
  args.device = device_.handle();
  args.buffer = handle_;
  check(p, call(p, "buffer_host_address", p.api_->buffer_host_address, &args), "buffer_host_address");
  // Unaligned memory is not shared: kernels may assume KILN_IR_ALIGN.
  if (reinterpret_cast<uintptr_t>(args.address) % KILN_IR_ALIGN == 0) host_address_ = args.address;
  return host_address_;
}

DeviceBuffer::~DeviceBuffer() {
  const Plugin& p = device_.plugin();
  if (handle_ != nullptr && p.has(&kiln_plugin_api::buffer_free)) {
    call_noexcept(p, "buffer_free", p.api_->buffer_free, device_.handle(), handle_);
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
  check(p, call(p, "buffer_write", p.api_->buffer_write, &args),
        fmt::format("buffer_write of {}", format_bytes(bytes)));
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
  check(p, call(p, "buffer_read", p.api_->buffer_read, &args), fmt::format("buffer_read of {}", format_bytes(bytes)));
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
  check(p, call(p, "buffer_copy", p.api_->buffer_copy, &args), fmt::format("buffer_copy of {}", format_bytes(bytes)));
}

}  // namespace kiln
