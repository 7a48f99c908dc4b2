#include "trainer/exit_flags.h"

#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <utility>

#include "core/error.h"

namespace kiln::trainer {

namespace {

// Megatron's SIGNAL_MAP (megatron/training/dist_signal_handler.py), the
// choices of its --exit-signal.
constexpr std::pair<const char*, int> kSignals[] = {
    {"SIGTERM", SIGTERM}, {"SIGINT", SIGINT}, {"SIGUSR1", SIGUSR1}, {"SIGUSR2", SIGUSR2}};

}  // namespace

std::string signal_name(int sig) {
  for (const auto& [name, number] : kSignals)
    if (number == sig) return name;
  return "signal " + std::to_string(sig);
}

void ExitFlags::register_flags(Flags& f) {
  f.add("--exit-signal-handler", &exit_signal_handler,
        "Megatron's handler: on --exit-signal, save (with --save) and exit 0 at the next iteration");
  f.add("--exit-signal", &exit_signal, "the signal --exit-signal-handler acts on: SIGTERM, SIGINT, SIGUSR1, SIGUSR2");
  f.add("--exit-interval", &exit_interval, "save (with --save) and exit 0 when the iteration is a multiple of N");
  f.add("--trigger-path", &trigger_path,
        "swiss-ai's trigger directory: DIR/save saves (and is removed), DIR/exit exits 0 without saving (kept); "
        "checked every --log-interval steps; DIR/exit is created when training finishes");
}

void ExitFlags::finalize(const Flags& f, const std::string& save_trigger_file) {
  const auto known =
      std::find_if(std::begin(kSignals), std::end(kSignals), [&](const auto& s) { return exit_signal == s.first; });
  if (known == std::end(kSignals))
    throw Error("--exit-signal " + exit_signal +
                " is not one Megatron accepts; give SIGTERM, SIGINT, SIGUSR1 or SIGUSR2");
  // Megatron ignores it without the handler; a run that would not act on
  // the signal it names must not start as if it did.
  if (f.given("--exit-signal") && !exit_signal_handler)
    throw Error("--exit-signal " + exit_signal +
                " needs --exit-signal-handler (Megatron ignores it otherwise); add it");
  signal_number_ = known->second;
  if (f.given("--exit-interval") && exit_interval <= 0)
    throw Error("--exit-interval must be positive, got " + std::to_string(exit_interval) +
                " (the run exits at iterations divisible by it); leave it out to run to --train-iters");
  if (!triggers_on()) return;
  if (!save_trigger_file.empty())
    throw Error("--trigger-path and --save-trigger-file both name the save trigger (" + save_trigger() + ", " +
                save_trigger_file + "); give one of them");
  // Rank 0 removes DIR/save and creates DIR/exit: both need a writable directory.
  std::error_code ec;
  std::filesystem::create_directories(trigger_path, ec);
  if (!std::filesystem::is_directory(trigger_path))
    throw Error("--trigger-path " + trigger_path + " is not a directory and cannot be created" +
                (ec ? " (" + ec.message() + ")" : std::string()) + "; give a directory kiln can write");
  if (access(trigger_path.c_str(), W_OK | X_OK) != 0)
    throw Error("--trigger-path " + trigger_path +
                " is not writable (kiln removes DIR/save and creates DIR/exit); give a directory kiln can write");
}

std::vector<int> ExitFlags::stop_signals() const {
  std::vector<int> sigs = {SIGTERM, SIGUSR2};
  if (exit_signal_handler && std::find(sigs.begin(), sigs.end(), signal_number_) == sigs.end())
    sigs.push_back(signal_number_);
  return sigs;
}

}  // namespace kiln::trainer
