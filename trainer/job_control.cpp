#include "trainer/job_control.h"

#include <atomic>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <utility>

#include "core/error.h"
#include "core/log.h"
#include "trainer/exit_flags.h"

namespace kiln::trainer {

namespace {

// The last signal received (0: none). A handler may only store to a
// lock-free atomic; the training loop reads it at the step boundary.
std::atomic<int> g_signal{0};
static_assert(std::atomic<int>::is_always_lock_free);

extern "C" void on_stop_signal(int sig) { g_signal.store(sig); }

// The handlers replaced, restored in reverse order (one JobControl at a time).
std::vector<std::pair<int, struct sigaction>> g_old;

enum Slot { kSignal = 0, kExitTrigger, kSaveTrigger, kDuration, kInterval, kStopTrigger };

std::string trigger_path(const std::string& given, const std::string& save, const char* name) {
  if (!given.empty()) return given;
  return save.empty() ? std::string() : (std::filesystem::path(save) / name).string();
}

// "SIGTERM or SIGUSR2", "SIGTERM, SIGUSR2 or SIGUSR1".
std::string signal_list(const std::vector<int>& sigs) {
  std::string list;
  for (size_t i = 0; i < sigs.size(); ++i)
    list += (i == 0 ? "" : i + 1 == sigs.size() ? " or " : ", ") + signal_name(sigs[i]);
  return list;
}

bool file_exists(const std::string& path) {
  std::error_code ec;
  return !path.empty() && std::filesystem::exists(path, ec);
}

// A trigger the run removes once it acts on it must be removable: a
// non-empty directory (or anything but a file) of that name would stop
// every run, and every resume, at the first check with status 0.
void check_removable_trigger(const std::string& path, const char* flag) {
  std::error_code ec;
  if (path.empty()) return;
  const auto st = std::filesystem::symlink_status(path, ec);
  if (ec || !std::filesystem::exists(st) || std::filesystem::is_regular_file(st)) return;
  const char* kind = std::filesystem::is_directory(st) ? "a directory" : "not a regular file";
  throw Error(std::string(flag) + " " + path + " is " + kind +
              ": kiln removes a trigger once it acts on it and cannot remove this one, so every run would stop "
              "there; remove it (a trigger is an empty file: touch it to ask)");
}

// A trigger left in place (its directory turned read-only since the start)
// would act again at every check and on every resume: say so.
void remove_trigger(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::remove(path, ec) && ec)
    logger().warn(
        "could not remove the trigger file {} ({}): remove it, or every run from this --save acts on it again", path,
        ec.message());
}

}  // namespace

JobControl::JobControl(const TrainConfig& cfg, int rank)
    : save_trigger_(cfg.exit.triggers_on() ? cfg.exit.save_trigger()
                                           : trigger_path(cfg.save_trigger_file, cfg.save, "kiln-save-now")),
      exit_trigger_(trigger_path(cfg.exit_trigger_file, cfg.save, "kiln-exit-now")),
      stop_trigger_(cfg.exit.triggers_on() ? cfg.exit.exit_trigger() : std::string()),
      signals_(cfg.exit.stop_signals()),
      log_interval_(cfg.log_interval),
      exit_interval_(cfg.exit.exit_interval),
      exit_minutes_(cfg.exit_duration_in_mins),
      rank_(rank),
      start_(std::chrono::steady_clock::now()) {
  // The default trigger files live in --save, so it must exist before the
  // first checkpoint for a user to create them.
  std::error_code ec;
  if (rank == 0 && !cfg.save.empty()) std::filesystem::create_directories(cfg.save, ec);
  // Every rank checks (a stat), so that a refusal ends all of them alike.
  check_removable_trigger(exit_trigger_, "exit trigger file (--exit-trigger-file)");
  check_removable_trigger(save_trigger_, cfg.exit.triggers_on() ? "save trigger file (--trigger-path DIR/save)"
                                                                : "save trigger file (--save-trigger-file)");
  g_signal.store(0);
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  g_old.clear();
  for (int sig : signals_) {
    struct sigaction old {};
    sigaction(sig, &sa, &old);
    g_old.emplace_back(sig, old);
  }
}

JobControl::~JobControl() {
  for (auto it = g_old.rbegin(); it != g_old.rend(); ++it) sigaction(it->first, &it->second, nullptr);
  g_old.clear();
}

void JobControl::local_requests(int64_t iteration, std::span<double, kSlots> slots) const {
  slots[kSignal] = g_signal.load() != 0 ? 1.0 : 0.0;
  slots[kDuration] =
      exit_minutes_ > 0 &&
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count() >= exit_minutes_ * 60.0
          ? 1.0
          : 0.0;
  // The same on every rank; only rank 0 counts it, so the sum reads as a flag.
  slots[kInterval] = rank_ == 0 && exit_interval_ > 0 && iteration % exit_interval_ == 0 ? 1.0 : 0.0;
  const bool check_files = rank_ == 0 && iteration % log_interval_ == 0;
  slots[kExitTrigger] = check_files && file_exists(exit_trigger_) ? 1.0 : 0.0;
  slots[kSaveTrigger] = check_files && file_exists(save_trigger_) ? 1.0 : 0.0;
  slots[kStopTrigger] = check_files && file_exists(stop_trigger_) ? 1.0 : 0.0;
}

JobControl::Decision JobControl::decide(std::span<const double, kSlots> summed) const {
  Decision d;
  if (summed[kSignal] > 0) {
    d = {true, true,
         "received " + signal_list(signals_) + " (on " + std::to_string(static_cast<long>(summed[kSignal])) +
             " rank(s))"};
  } else if (summed[kDuration] > 0) {
    char minutes[32];
    std::snprintf(minutes, sizeof(minutes), "%g", exit_minutes_);
    d = {true, true, std::string("ran for --exit-duration-in-mins ") + minutes};
  } else if (summed[kInterval] > 0) {
    d = {true, true, "reached --exit-interval " + std::to_string(exit_interval_)};
  } else if (summed[kExitTrigger] > 0) {
    d = {true, true, "found the exit trigger file " + exit_trigger_};
    if (rank_ == 0) remove_trigger(exit_trigger_);
  } else if (summed[kStopTrigger] > 0) {
    // swiss-ai's exit trigger: exit without a checkpoint of its own (a save
    // trigger or --save-interval at this iteration still saves); the file stays.
    d = {summed[kSaveTrigger] > 0, true, "found the exit trigger file " + stop_trigger_ + " (--trigger-path)"};
  } else if (summed[kSaveTrigger] > 0) {
    d = {true, false, "found the save trigger file " + save_trigger_};
  }
  // A save trigger is consumed even when an exit also saves.
  if (summed[kSaveTrigger] > 0 && rank_ == 0) remove_trigger(save_trigger_);
  return d;
}

void JobControl::training_finished(int64_t iteration) const {
  if (rank_ != 0 || stop_trigger_.empty()) return;
  std::ofstream touch(stop_trigger_, std::ios::app);
  if (!touch) logger().warn("could not create {}: a job script waiting for it will requeue the run", stop_trigger_);
  // swiss-ai's words.
  std::printf("Training finished after %ld iterations; Canceling pending scheduled jobs.\n",
              static_cast<long>(iteration));
  std::fflush(stdout);
}

}  // namespace kiln::trainer
