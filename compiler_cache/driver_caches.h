// Drivers that compile again at a kernel's first run keep what they
// compiled in on-disk caches of their own. lavapipe (Mesa's llvmpipe) builds
// a compute shader's machine code at its first dispatch, not when kiln
// creates the pipeline, and its VkPipelineCache holds none of it; Mesa's
// disk cache does, across processes. kiln points such caches into its
// compile cache directory, so that `kiln precompile` (whose plugins run
// every dispatch once at compile) fills them beside kiln's entries, and a
// run sharing the cache directory finds nothing left to compile at step 1
// (docs/CACHE.md "Nothing left to compile at step 1").
#pragma once

#include <string>

namespace kiln::compiler_cache {

// Sets each known driver cache variable (MESA_SHADER_CACHE_DIR) to its
// directory under <dir>/drivers/, creating it, unless the user has set the
// variable (their choice wins). For a writable cache only: a read-only cache
// is never written. Call before any plugin opens a driver.
void point_driver_caches(const std::string& dir);

// <dir>/drivers: what kiln hosts for drivers (not entries: `kiln cache`
// leaves it alone; each driver bounds its own cache).
std::string driver_caches_dir(const std::string& dir);

}  // namespace kiln::compiler_cache
