// Runs the conformance cases in child processes, so that a plugin that
// crashes, aborts, exits or hangs in one case fails that case and the run
// goes on.
//
// One child opens the device and runs the units (run_units' plan) in order,
// sending each unit's results to the parent through a pipe as it finishes.
// If the child dies (a signal, exit()) or sends nothing within the unit's
// time limit (killed), the unit it had started is to blame: a unit of one
// case fails with the signal (and the plugin function that was running,
// from core/plugin_call), a merged unit is split and its cases rerun one per
// unit, and a new child goes on from there. A run without a crash costs one
// fork. The parent never opens the device: a device's driver threads would
// not survive into a forked child.
#pragma once

#include <functional>
#include <memory>

#include "core/backend.h"
#include "graph/conformance/runner.h"

namespace kiln::conformance {

struct Isolation {
  // Opens the device; called in each child. Its kiln::Error ends the run
  // with that error (thrown by run_isolated in the parent).
  std::function<std::unique_ptr<Device>()> open;
  // Called in the first child once the device is open (to print a header;
  // the child's stdout is the parent's).
  std::function<void(Device&)> on_open;
  // Seconds a case may run before its child is killed and the case fails
  // as hung; a merged unit gets this per case. 0: no limit.
  double case_timeout_s = 120;
};

// run() with every unit in a child process. Options.out, verbose and the
// report are the parent's; options.fallback must not be opened yet (each
// child opens its own on first need).
Report run_isolated(const Suite& suite, const Options& options, const Isolation& isolation);

}  // namespace kiln::conformance
