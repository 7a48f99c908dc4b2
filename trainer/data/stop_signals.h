// SIGTERM and SIGINT (Ctrl-C) as a request to stop, for commands that must
// clean up before they exit (kiln preprocess removes its temporaries). While
// a StopSignals lives, the two signals only record themselves; the command
// polls stop_signal() at points where stopping is safe.
#pragma once

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

}  // namespace kiln::data
