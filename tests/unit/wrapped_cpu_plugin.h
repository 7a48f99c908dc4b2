// Test helper: the cpu plugin's table behind hooks, loaded in-process as a
// backend of its own ("wrapped"). Tests use it to play a partial backend
// (op_supported denies some ops) or a faulty one (execute writes out of
// bounds), and it checks that the host never hands execute a buffer
// allocated on another device.
#pragma once

#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "core/backend.h"
#include "core/registry.h"

namespace kiln::testing {

struct WrappedHooks {
  const kiln_plugin_api* real = nullptr;
  std::function<bool(kiln_op)> supported;  // empty: every op
  // Runs after the real execute; gets the slot buffers' sizes.
  std::function<void(const kiln_plugin_api* real, kiln_execute_args* args, const std::vector<uint64_t>& sizes)>
      after_execute;
  std::mutex mutex;
  std::map<const kiln_buffer*, std::pair<const kiln_device*, uint64_t>> buffers;  // device, size
  std::string violation;                                                          // first misuse seen by the wrapper
};

inline WrappedHooks& wrapped_hooks() {
  static WrappedHooks h;
  return h;
}

namespace wrapped_detail {
inline kiln_error* buffer_alloc(kiln_buffer_alloc_args* args) {
  WrappedHooks& h = wrapped_hooks();
  kiln_error* e = h.real->buffer_alloc(args);
  if (!e) {
    std::lock_guard<std::mutex> lock(h.mutex);
    h.buffers[args->buffer] = {args->device, args->size_bytes};
  }
  return e;
}
inline void buffer_free(kiln_device* d, kiln_buffer* b) {
  WrappedHooks& h = wrapped_hooks();
  {
    std::lock_guard<std::mutex> lock(h.mutex);
    h.buffers.erase(b);
  }
  h.real->buffer_free(d, b);
}
inline kiln_error* execute(kiln_execute_args* args) {
  WrappedHooks& h = wrapped_hooks();
  std::vector<uint64_t> sizes;
  {
    std::lock_guard<std::mutex> lock(h.mutex);
    for (int32_t s = 0; s < args->num_slots; ++s) {
      auto it = h.buffers.find(args->slots[s]);
      if ((it == h.buffers.end() || it->second.first != args->device) && h.violation.empty())
        h.violation = "execute got slot " + std::to_string(s) + " from another device";
      sizes.push_back(it == h.buffers.end() ? 0 : it->second.second);
    }
  }
  kiln_error* e = h.real->execute(args);
  if (!e && h.after_execute) h.after_execute(h.real, args, sizes);
  return e;
}
inline kiln_error* op_supported(kiln_op_supported_args* args) {
  WrappedHooks& h = wrapped_hooks();
  args->supported = !h.supported || h.supported(static_cast<kiln_op>(args->op)) ? 1 : 0;
  return nullptr;
}
}  // namespace wrapped_detail

// Opens device 0 of the wrapped backend; resets the hooks. It plays a
// device with memory of its own (what a split copies across) unless
// `host_memory`: then it offers its buffers as host memory (ABI 1.5), which
// the cpu fallback shares instead of copying.
inline std::unique_ptr<Device> open_wrapped_cpu(int threads = 0, bool host_memory = false) {
  WrappedHooks& h = wrapped_hooks();
  auto cpu = Registry::instance().find("cpu");
  if (!cpu) throw Error("the cpu plugin is not loaded");
  h.real = cpu->raw_table();
  h.supported = nullptr;
  h.after_execute = nullptr;
  h.violation.clear();
  static kiln_plugin_api table;
  table = *cpu->raw_table();
  table.name = "wrapped";
  table.buffer_alloc = wrapped_detail::buffer_alloc;
  table.buffer_free = wrapped_detail::buffer_free;
  table.execute = wrapped_detail::execute;
  table.op_supported = wrapped_detail::op_supported;
  if (!host_memory) table.buffer_host_address = nullptr;
  table.buffer_wrap_host = nullptr;  // the cpu fallback views; the primary never needs to
  // It runs the cpu plugin's code: the cpu plugin's binary identity keys its cache entries.
  auto plugin = std::make_shared<Plugin>("wrapped", "(in-process test wrapper of " + cpu->path + ")", &table,
                                         sizeof(table), cpu->binary_identity());
  return std::make_unique<Device>(plugin, 0, threads);
}

}  // namespace kiln::testing
