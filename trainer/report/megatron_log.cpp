#include "trainer/report/megatron_log.h"

#include <cmath>
#include <ctime>

namespace kiln::trainer {

namespace {
std::string printf_string(const char* fmt, auto... args) {
  char buf[512];
  std::snprintf(buf, sizeof(buf), fmt, args...);
  return buf;
}
}  // namespace

std::string megatron_timestamp() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

std::string format_iteration(const IterationLog& l) {
  // Field order and number formats follow Megatron-LM's training_log().
  std::string s = printf_string(" [%s] iteration %8ld/%8ld |", megatron_timestamp().c_str(),
                                static_cast<long>(l.iteration), static_cast<long>(l.train_iters));
  s += printf_string(" consumed samples: %12ld |", static_cast<long>(l.consumed_samples));
  s += printf_string(" elapsed time per iteration (ms): %.1f |", l.ms_per_iteration);
  if (l.tflops_per_gpu) s += printf_string(" throughput per GPU (TFLOP/s/GPU): %.1f |", *l.tflops_per_gpu);
  s += printf_string(" throughput (tokens/s): %.1f |", l.tokens_per_second);
  s += printf_string(" learning rate: %.6E |", l.learning_rate);
  if (l.decoupled_learning_rate) s += printf_string(" decoupled learning rate: %.6E |", *l.decoupled_learning_rate);
  s += printf_string(" global batch size: %5ld |", static_cast<long>(l.global_batch_size));
  if (l.lm_loss) s += printf_string(" lm loss: %.6E |", *l.lm_loss);
  if (l.loss_scale) s += printf_string(" loss scale: %.1f |", *l.loss_scale);
  if (l.grad_norm) s += printf_string(" grad norm: %.3f |", *l.grad_norm);
  s += printf_string(" number of skipped iterations: %3ld |", static_cast<long>(l.skipped));
  s += printf_string(" number of nan iterations: %3ld |", static_cast<long>(l.nan));
  return s;
}

nlohmann::json iteration_json(const IterationLog& l) {
  nlohmann::json j = {{"iteration", l.iteration},
                      {"consumed_samples", l.consumed_samples},
                      {"ms_per_iteration", l.ms_per_iteration},
                      {"tokens_per_second", l.tokens_per_second},
                      {"learning_rate", l.learning_rate},
                      {"global_batch_size", l.global_batch_size}};
  if (l.tflops_per_gpu) j["tflops_per_gpu"] = *l.tflops_per_gpu;
  if (l.decoupled_learning_rate) j["decoupled_learning_rate"] = *l.decoupled_learning_rate;
  if (l.lm_loss) j["lm_loss"] = *l.lm_loss;
  if (l.loss_scale) j["loss_scale"] = *l.loss_scale;
  if (l.grad_norm) j["grad_norm"] = *l.grad_norm;
  j["skipped_iterations"] = l.skipped;
  j["nan_iterations"] = l.nan;
  return j;
}

std::string format_validation(int64_t iteration, double loss) {
  std::string body = printf_string(" validation loss at iteration %ld | lm loss value: %.6E | lm loss PPL: %.6E | ",
                                   static_cast<long>(iteration), loss, std::exp(std::min(20.0, loss)));
  std::string rule(body.size() + 1, '-');
  return rule + "\n" + body + "\n" + rule + "\n";
}

}  // namespace kiln::trainer
