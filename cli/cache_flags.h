// The compile-cache flags `kiln train` and `kiln precompile` share, and
// turning them into the process-wide cache configuration.
#pragma once

#include <string>

#include "compiler_cache/compile_cache.h"
#include "trainer/flags.h"

namespace kiln::cli {

struct CacheFlags {
  std::string cache_dir;  // empty: KILN_CACHE_DIR or ~/.cache/kiln; "off": no cache
  bool require_precompiled = false;
  bool retry_failed = false;

  void register_flags(trainer::Flags& flags);
  compiler_cache::CacheConfig config() const;
};

}  // namespace kiln::cli
