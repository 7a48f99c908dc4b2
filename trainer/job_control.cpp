#include "trainer/job_control.h"

#include <atomic>
#include <csignal>
#include <cstdio>
#include <filesystem>

namespace kiln::trainer {

namespace {

// The last signal received (0: none). A handler may only store to a
// lock-free atomic; the training loop reads it at the step boundary.
std::atomic<int> g_signal{0};
static_assert(std::atomic<int>::is_always_lock_free);

extern "C" void on_stop_signal(int sig) { g_signal.store(sig); }

struct sigaction g_old_term, g_old_usr2;

enum Slot { kSignal = 0, kExitTrigger = 1, kSaveTrigger = 2, kDuration = 3 };

std::string trigger_path(const std::string& given, const std::string& save, const char* name) {
  if (!given.empty()) return given;
  return save.empty() ? std::string() : (std::filesystem::path(save) / name).string();
}

}  // namespace

JobControl::JobControl(const TrainConfig& cfg, int rank)
    : save_trigger_(trigger_path(cfg.save_trigger_file, cfg.save, "kiln-save-now")),
      exit_trigger_(trigger_path(cfg.exit_trigger_file, cfg.save, "kiln-exit-now")),
      log_interval_(cfg.log_interval),
      exit_minutes_(cfg.exit_duration_in_mins),
      rank_(rank),
      start_(std::chrono::steady_clock::now()) {
  // The default trigger files live in --save, so it must exist before the
  // first checkpoint for a user to create them.
  std::error_code ec;
  if (rank == 0 && !cfg.save.empty()) std::filesystem::create_directories(cfg.save, ec);
  g_signal.store(0);
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGTERM, &sa, &g_old_term);
  sigaction(SIGUSR2, &sa, &g_old_usr2);
}

JobControl::~JobControl() {
  sigaction(SIGTERM, &g_old_term, nullptr);
  sigaction(SIGUSR2, &g_old_usr2, nullptr);
}

void JobControl::local_requests(int64_t iteration, std::span<double, kSlots> slots) const {
  slots[kSignal] = g_signal.load() != 0 ? 1.0 : 0.0;
  slots[kDuration] =
      exit_minutes_ > 0 &&
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count() >= exit_minutes_ * 60.0
          ? 1.0
          : 0.0;
  const bool check_files = rank_ == 0 && iteration % log_interval_ == 0;
  std::error_code ec;
  slots[kExitTrigger] = check_files && !exit_trigger_.empty() && std::filesystem::exists(exit_trigger_, ec) ? 1.0 : 0.0;
  slots[kSaveTrigger] = check_files && !save_trigger_.empty() && std::filesystem::exists(save_trigger_, ec) ? 1.0 : 0.0;
}

JobControl::Decision JobControl::decide(std::span<const double, kSlots> summed) const {
  Decision d;
  std::error_code ec;
  if (summed[kSignal] > 0) {
    d = {true, true,
         "received SIGTERM or SIGUSR2 (on " + std::to_string(static_cast<long>(summed[kSignal])) + " rank(s))"};
  } else if (summed[kDuration] > 0) {
    char minutes[32];
    std::snprintf(minutes, sizeof(minutes), "%g", exit_minutes_);
    d = {true, true, std::string("ran for --exit-duration-in-mins ") + minutes};
  } else if (summed[kExitTrigger] > 0) {
    d = {true, true, "found the exit trigger file " + exit_trigger_};
    if (rank_ == 0) std::filesystem::remove(exit_trigger_, ec);
  } else if (summed[kSaveTrigger] > 0) {
    d = {true, false, "found the save trigger file " + save_trigger_};
  }
  // A save trigger is consumed even when an exit also saves.
  if (summed[kSaveTrigger] > 0 && rank_ == 0) std::filesystem::remove(save_trigger_, ec);
  return d;
}

}  // namespace kiln::trainer
