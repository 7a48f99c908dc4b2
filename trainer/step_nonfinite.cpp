// The skip line: on a step skipped for a non-finite loss or gradients, the
// first gradient and the first value of the step graph that are not finite
// (graph/nonfinite.h). Megatron says only that the step was skipped; which
// tensor overflowed is what a user needs to fix an fp16 run. It runs only on
// a skipped step, after the decision, so normal steps cost nothing more.
#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/log.h"
#include "graph/nonfinite.h"
#include "trainer/model/step_graphs.h"
#include "trainer/step.h"

namespace kiln::trainer {

namespace {
// A gradient buffer holds f32 or (--main-grads-dtype bf16) bf16 values; a
// bf16 is not finite when its exponent bits are all set, as an f32's.
bool all_finite(DeviceBuffer& buffer, kiln_dtype dtype) {
  if (dtype == KILN_BF16) {
    std::vector<uint16_t> halves(buffer.size() / sizeof(uint16_t));
    buffer.read(halves.data(), halves.size() * sizeof(uint16_t));
    for (uint16_t h : halves)
      if ((h & 0x7f80u) == 0x7f80u) return false;
    return true;
  }
  std::vector<float> values(buffer.size() / sizeof(float));
  buffer.read(values.data(), values.size() * sizeof(float));
  for (float v : values)
    if (!std::isfinite(v)) return false;
  return true;
}
}  // namespace

// The gradients first: re-running the step graph overwrites them. Then the
// micro-batches again, in order, each with a probe after every node, up to
// the first with a non-finite value. A graph with tensor-parallel
// collectives runs in step with its group, so there every micro-batch runs.
void Step::report_non_finite(const StepResult& result, double loss_scale) {
  std::string gradient;
  for (const ParamSpec& p : run_.state->params())
    if (!all_finite(run_.state->buffer(grad_name(p.name)), run_.cfg.model.grad_dtype)) {
      gradient = grad_name(p.name);
      break;
    }
  std::string value = "not looked for under pipeline parallelism";
  if (!pipeline_) {
    value = "none in this rank's step graph";
    bool found = false;
    for (int64_t m = 0; m < run_.micro_batches && (!found || run_.at.tp > 1); ++m) {
      ChunkSteps& steps = run_.chunks.front();
      graph::Executable& train_step = m == 0 ? *steps.first_micro_batch : *steps.next_micro_batch;
      prepare_micro_batch(train_step, m, static_cast<float>(loss_scale));
      const std::string first = graph::first_non_finite(train_step, *run_.device, &run_.fallback, &run_.process_groups);
      if (!found && !first.empty()) {
        value = fmt::format("{}, micro-batch {}", first, m);
        found = true;
      }
    }
  }
  const std::string scale = run_.cfg.precision.scales_loss() ? fmt::format(" at loss scale {}", loss_scale) : "";
  logger().info("iteration {} skipped{}: first non-finite gradient: {}; first non-finite value: {}", result.iteration,
                scale, gradient.empty() ? "none on this rank" : gradient, value);
}

}  // namespace kiln::trainer
