// Which plugin function is running, recorded so that a fatal signal can be
// blamed on the right plugin and call.
//
// A plugin that segfaults, aborts or throws past its C ABI used to end kiln
// with no word about which plugin did it. Every typed call in core/backend
// opens a PluginCall for the time the plugin's code runs. A signal handler
// (core/fatal_signal_report, the conformance runner's child processes) then
// asks plugin_call_for_signal() what was running: that reads only plain
// pointers to copies of the plugin's name and path that live as long as the
// process, so it is async-signal-safe.
#pragma once

namespace kiln {

class Plugin;

// Records `function` (a string literal, e.g. "execute") of `plugin` as in
// progress on this thread, and as the latest call of the process, until the
// object goes out of scope. Calls may nest (the previous record comes back).
class PluginCall {
 public:
  PluginCall(const Plugin& plugin, const char* function) noexcept;
  ~PluginCall();
  PluginCall(const PluginCall&) = delete;
  PluginCall& operator=(const PluginCall&) = delete;

 private:
  const char* previous_backend_;
  const char* previous_path_;
  const char* previous_function_;
};

struct PluginCallInfo {
  const char* backend = nullptr;  // nullptr: no plugin call was ever made
  const char* path = nullptr;
  const char* function = nullptr;
  // False: no call is running now; the fields name the last one made (a
  // crash on a thread the plugin or its driver started after a call returned).
  bool in_progress = false;
};

// Async-signal-safe. The call running on this thread if any; else, if any
// thread is in a plugin call, the latest one entered (a plugin's worker
// thread that faulted); else the last call made.
PluginCallInfo plugin_call_for_signal() noexcept;

}  // namespace kiln
