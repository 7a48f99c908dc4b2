// The real cpu plugin under a test plugin that wraps it ("faults",
// "execfaults", "hostsplit"): dlopened from the path baked in at build time,
// so the wrapper and the host's cpu fallback run one copy of its code.
#pragma once

#include <dlfcn.h>

#include <algorithm>
#include <cstring>

#include "kiln/plugin.h"

#ifndef KILN_TEST_CPU_PLUGIN
#error "KILN_TEST_CPU_PLUGIN must name the cpu plugin file"
#endif

namespace kiln_test {

// The cpu plugin's function table, or null when it cannot be loaded.
inline const kiln_plugin_api* real_cpu_api() {
  static const kiln_plugin_api* api = [] {
    void* lib = dlopen(KILN_TEST_CPU_PLUGIN, RTLD_NOW | RTLD_LOCAL);
    if (!lib) return static_cast<const kiln_plugin_api*>(nullptr);
    auto get = reinterpret_cast<kiln_plugin_get_api_fn>(dlsym(lib, KILN_PLUGIN_GET_API_SYMBOL));
    return get ? get() : nullptr;
  }();
  return api;
}

// The cpu plugin's table under backend name `name`, for the wrapper to
// override what it changes; struct_size 0 (the loader then skips the
// wrapper with a reason) when the cpu plugin cannot be loaded.
inline kiln_plugin_api real_cpu_table(const char* name) {
  kiln_plugin_api t{};
  const kiln_plugin_api* real = real_cpu_api();
  if (!real) return t;
  std::memcpy(&t, real, std::min(sizeof(t), real->struct_size));
  t.struct_size = sizeof(t);
  t.name = name;
  return t;
}

}  // namespace kiln_test
