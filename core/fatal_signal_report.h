// One line naming the plugin when a fatal signal ends kiln.
//
// A plugin that segfaults in `execute` used to end `kiln train` with exit
// 139 and nothing else. Once installed, a SIGSEGV, SIGBUS, SIGILL, SIGFPE or
// SIGABRT writes
//   kiln: fatal SIGSEGV in plugin 'NAME' (PATH) during execute; <hint>
// to stderr with write(2) (the call comes from core/plugin_call, recorded
// without allocation), then the signal is raised again with its default
// action, so the exit status and any core dump stay the signal's. A handler
// installed before this one (e.g. the SIGBUS guard of mapped .bin reads,
// trainer/data/mapping_fault) runs first and may jump out of the fault; one
// installed after it must chain to it the same way.
#pragma once

namespace kiln {

// Installs the handlers once per process (later calls do nothing), with an
// alternate signal stack for the calling thread so a stack overflow is
// reported too.
void install_fatal_signal_report();

// The line the handler writes for `sig`, formatted into `out` (at most
// `size` bytes, not terminated) without allocating; returns its length.
// Async-signal-safe; exposed for tests.
unsigned long format_fatal_signal_line(int sig, char* out, unsigned long size) noexcept;

}  // namespace kiln
