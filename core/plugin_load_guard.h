// Running a plugin's load-time code (its constructors, kiln_plugin_get_api,
// kiln_plugin_probe) without letting it end kiln silently.
//
// A stray library on the plugin path may crash in its constructor or call
// exit(0) from it: the first killed `kiln train` with no message, the second
// made it exit 0 without training. In-process, a guard turns either into one
// line naming the plugin and exit status 1. `kiln devices`, which loads every
// plugin file, first loads each one in a child process so that one bad file
// is reported and the listing goes on.
#pragma once

#include <functional>
#include <string>

namespace kiln {

// Runs `load` (dlopen + table checks of `path`) in this process. If it calls
// exit() or dies of SIGSEGV/SIGBUS/SIGILL/SIGFPE/SIGABRT, prints
// "kiln: error: plugin <path> ...; remove it from <dir>" and _exit(1)s
// (or with the status set below).
void run_guarded_load(const std::string& path, const std::function<void()>& load);

// The status run_guarded_load _exit()s with after printing its line (1 until
// set). A process that forks only to open a device sets a distinct one, so
// that its parent knows the line is out and adds none of its own.
void set_guarded_load_exit_status(int status);

// Runs `load` in a forked child. Returns why the plugin ended the child
// ("called exit() while loading", "crashed with signal 11 (...) while
// loading", ...), or an empty string if it loaded and returned normally.
std::string probe_load_in_child(const std::function<void()>& load);

}  // namespace kiln
