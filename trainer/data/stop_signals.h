// SIGTERM and SIGINT (Ctrl-C) as a request to stop, for commands that must
// clean up before they exit (kiln preprocess removes its temporaries). While
// a StopSignals lives, the two signals only record themselves; the command
// polls stop_signal() at points where stopping is safe.
#pragma once

#include <string>

#include "core/error.h"

namespace kiln::data {

class StopSignals {
 public:
  StopSignals();   // installs the handlers, clears any earlier request
  ~StopSignals();  // restores the handlers it replaced
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;
};

// The signal received while a StopSignals lived (0: none).
int stop_signal();

// "SIGTERM", "SIGINT", or "signal N".
const char* stop_signal_name(int sig);

// What a writer throws at a safe point once a stop signal came (kiln export
// and import, between the files of a checkpoint or an HF directory): its
// catch removes the temporary and names the signal, not a disk problem.
struct StopRequested : Error {
  explicit StopRequested(int sig) : Error(std::string("stopped by ") + stop_signal_name(sig)), signal(sig) {}
  int signal;
};

// Throws StopRequested when a stop signal came; a no-op where no
// StopSignals is installed (kiln train handles its signals itself).
void throw_if_stop_requested();

}  // namespace kiln::data
