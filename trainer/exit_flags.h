// Megatron-LM's exit flags and swiss-ai's trigger directory, as requests for
// kiln's one job-control path (trainer/job_control.h):
//   --exit-signal-handler [--exit-signal NAME]  the signal saves and exits 0
//   --exit-interval N                           save and exit 0 when iteration % N == 0
//   --trigger-path DIR                          DIR/save saves (removed), DIR/exit exits
//                                               without saving (kept; touched at the end)
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trainer/flags.h"

namespace kiln::trainer {

struct ExitFlags {
  bool exit_signal_handler = false;
  std::string exit_signal = "SIGTERM";  // Megatron's default
  int64_t exit_interval = 0;            // 0: off (Megatron's None)
  std::string trigger_path;             // empty or /dev/null (swiss-ai's default): off

  void register_flags(Flags& flags);
  // One-line errors for an unknown signal, a non-positive interval, a
  // trigger directory that cannot be made or written, or a save trigger
  // named twice. Creates the trigger directory when it is missing.
  void finalize(const Flags& flags, const std::string& save_trigger_file);

  // The signals that save and exit: kiln's own SIGTERM and SIGUSR2, plus
  // --exit-signal under --exit-signal-handler. Valid after finalize().
  std::vector<int> stop_signals() const;
  bool triggers_on() const { return !trigger_path.empty() && trigger_path != "/dev/null"; }
  std::string save_trigger() const { return trigger_path + "/save"; }
  std::string exit_trigger() const { return trigger_path + "/exit"; }

 private:
  int signal_number_ = 0;
};

// "SIGTERM", "SIGINT", "SIGUSR1", "SIGUSR2" or "signal N".
std::string signal_name(int sig);

}  // namespace kiln::trainer
