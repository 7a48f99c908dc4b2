// The options object kiln passes to compile (kiln_compile_args::options, a
// JSON object or NULL; docs/PLUGIN_GUIDE.md, "Compile options"). Options are
// hints: none may change what an executable computes, so none is part of
// the compile cache's key.
#pragma once

#include "kiln/plugin_kit.hpp"

#pragma GCC visibility push(hidden)

namespace kiln::backend {

struct CompileOptions {
  // kiln precompile compiles for a later process: nothing runs the
  // executable in this one. A plugin whose driver compiles machine code at
  // the first dispatch may run it once, so that the driver's disk cache
  // holds that code before the first training step. A compile on a cache
  // miss in training leaves it false: the step that follows compiles it.
  bool ahead_of_time = false;
};

// Parses `options` (NULL: the defaults); unknown keys are ignored, so a newer
// kiln may pass hints an older plugin does not know. Throws Failure
// KILN_ERR_INVALID_ARGUMENT for text that is not a JSON object or a known
// key of the wrong type.
CompileOptions parse_compile_options(const char* options);

}  // namespace kiln::backend

#pragma GCC visibility pop
