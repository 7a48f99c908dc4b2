// PoCL 3.1 keeps one process-wide cache of loaded work-group functions,
// keyed by (kernel hash, local size). Two programs built from the same
// source in different contexts share the hash, and when their kernels run,
// or their binaries are built, from two threads at once, an entry can be
// released by the wrong run: PoCL then aborts the process with
// "pocl_release_dlhandle_cache: Assertion `found->ref_count > 0' failed"
// (CI saw it once in OpenclOps.ConcurrentCompilesAgree; another project
// reports the same assertion from concurrent contexts on PoCL 5.0).
//
// compile is thread-safe by the plugin ABI, so on PoCL compile, load and
// loaded_free hold this lock wherever they build a program, run kernels, read
// a binary or release a program or context. execute does not: one device's
// runs are serialised by its queue, and kiln runs one PoCL device a process.
// It costs no parallelism: PoCL already generates code under one global lock
// of its own, and `kiln precompile` compiles in worker processes. Other
// drivers take no lock.
#pragma once

#include <mutex>

#include "device.h"

#pragma GCC visibility push(hidden)

namespace kiln::ocl {

// Held until the returned lock goes out of scope; empty on other drivers.
inline std::unique_lock<std::mutex> pocl_serial(const DeviceInfo& device) {
  static std::mutex mutex;
  return device.is_pocl ? std::unique_lock<std::mutex>(mutex) : std::unique_lock<std::mutex>();
}

}  // namespace kiln::ocl

#pragma GCC visibility pop
