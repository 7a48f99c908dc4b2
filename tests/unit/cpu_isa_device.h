// The cpu backend's device on one kernel set (a KILN_CPU_ISA path:
// "avx512", "avx2" or "baseline"), opened once per test process with 2
// threads so the parallel paths run; nullptr where this CPU lacks the path,
// and the test skips.
#pragma once

#include <map>
#include <memory>
#include <string>

#include "core/backend.h"
#include "core/error.h"
#include "core/registry.h"
#include "graph/conformance/runner.h"

namespace kiln::test {

inline Device* cpu_isa_device(const std::string& isa) {
  // The registry first, so it outlives the devices at exit.
  static Registry& registry = Registry::instance();
  static std::map<std::string, std::unique_ptr<Device>> devices;  // one per process: an inline function's static
  auto it = devices.find(isa);
  if (it == devices.end()) {
    std::unique_ptr<Device> d;
    try {
      const conformance::ScopedHints env({"KILN_CPU_ISA=" + isa});  // the plugin reads it at device open
      d = registry.open("cpu", 0, 2);
    } catch (const Error&) {
      // A path above this CPU's: the caller skips.
    }
    it = devices.emplace(isa, std::move(d)).first;
  }
  return it->second.get();
}

}  // namespace kiln::test
