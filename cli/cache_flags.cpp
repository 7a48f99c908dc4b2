#include "cli/cache_flags.h"

#include "compiler_cache/store.h"

namespace kiln::cli {

void CacheFlags::register_flags(trainer::Flags& f) {
  f.add("--cache-dir", &cache_dir,
        "compile cache directory (default: $KILN_CACHE_DIR, else $XDG_CACHE_HOME/kiln or ~/.cache/kiln; 'off': none)");
  f.add("--require-precompiled", &require_precompiled,
        "fail instead of compiling when a graph is not in the compile cache (run kiln precompile first)");
  f.add("--retry-failed", &retry_failed, "compile graphs whose earlier compilation failed (cached .failed markers)");
}

compiler_cache::CacheConfig CacheFlags::config() const {
  compiler_cache::CacheConfig c;
  c.dir = cache_dir.empty() ? compiler_cache::default_cache_dir() : cache_dir;
  if (c.dir == "off") c.dir.clear();
  c.require_precompiled = require_precompiled;
  c.retry_failed = retry_failed;
  return c;
}

}  // namespace kiln::cli
